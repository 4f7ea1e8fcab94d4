"""The remote-write client against a scripted loopback receiver: wire format, auth, errors."""

from __future__ import annotations

import base64
import email.utils
import os
import socket
import time
from pathlib import Path

import cramjam
import pytest
import requests

from guardian.adapters import _remote_write_pb2 as pb
from guardian.adapters.remote_write import (
    RemoteWriteClient,
    _retry_after,
    batches,
    decode_write_request,
    encode_write_request,
)
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig, TlsConfig
from guardian.model.series import STALE_NAN, TimeSeries, is_stale_marker
from guardian_common.errors import ConfigError, PermanentError, TransientError
from tests.unit.guardian.remote_write.conftest import Answer, Pki, Receiver

SERIES = [
    TimeSeries(
        {"__name__": "ALERTS", "alertstate": "firing", "alertname": "GpuIdle", "pod": "p"},
        [(1_700_000_000_000, 1.0), (1_700_000_060_000, 1.0)],
    ),
    TimeSeries(
        {"__name__": "ALERTS_FOR_STATE", "alertname": "GpuIdle", "pod": "p"},
        [(1_700_000_060_000, STALE_NAN)],
    ),
]


def test_body_is_a_snappy_block_of_a_write_request_with_sorted_labels(
    receiver: Receiver,
) -> None:
    RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write(SERIES)

    (request,) = receiver.requests
    assert request.path == "/api/v1/write"
    # Block format: decodes with the raw decoder; the framed format starts with a stream id.
    assert not request.body.startswith(b"\xff\x06\x00\x00sNaPpY")
    message = pb.WriteRequest.FromString(bytes(cramjam.snappy.decompress_raw(request.body)))
    first, second = message.timeseries
    assert [(label.name, label.value) for label in first.labels] == [
        ("__name__", "ALERTS"),
        ("alertname", "GpuIdle"),
        ("alertstate", "firing"),
        ("pod", "p"),
    ]
    assert [(s.timestamp, s.value) for s in first.samples] == [
        (1_700_000_000_000, 1.0),
        (1_700_000_060_000, 1.0),
    ]
    assert is_stale_marker(second.samples[0].value)
    assert list(message.metadata) == []


def test_protocol_headers_user_agent_and_extra_headers(receiver: Receiver) -> None:
    RemoteWriteClient(
        HttpClientConfig(receiver.url, timeout=5, headers={"X-Scope-OrgID": "gpu"})
    ).write(SERIES)

    headers = receiver.requests[0].headers
    assert headers["Content-Encoding"] == "snappy"
    assert headers["Content-Type"] == "application/x-protobuf"
    assert headers["X-Prometheus-Remote-Write-Version"] == "0.1.0"
    assert headers["User-Agent"].startswith("gpu-guardian/")
    assert headers["X-Scope-OrgID"] == "gpu"
    assert "Authorization" not in headers


def test_bearer_token_file_is_read_again_for_every_request(
    receiver: Receiver, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    client = RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5, bearer_token_file=token))

    client.write(SERIES)
    token.write_text("rotated")
    client.write(SERIES)

    assert [r.headers["Authorization"] for r in receiver.requests] == [
        "Bearer first",
        "Bearer rotated",
    ]


def test_missing_or_empty_token_file_is_permanent(receiver: Receiver, tmp_path: Path) -> None:
    token = tmp_path / "token"
    client = RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5, bearer_token_file=token))
    with pytest.raises(PermanentError, match="cannot read bearer token file"):
        client.write(SERIES)
    token.write_text("  \n")
    with pytest.raises(PermanentError, match="is empty"):
        client.write(SERIES)
    assert receiver.requests == []


def test_basic_auth(receiver: Receiver) -> None:
    auth = BasicAuthConfig("guardian", "s3cret")
    RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5, basic_auth=auth)).write(SERIES)

    expected = base64.b64encode(b"guardian:s3cret").decode()
    assert receiver.requests[0].headers["Authorization"] == f"Basic {expected}"


def test_requests_hold_at_most_max_samples_and_keep_each_series_in_order(
    receiver: Receiver,
) -> None:
    many = [
        TimeSeries({"__name__": "m", "i": str(i)}, [(t, float(t)) for t in range(1, 4)])
        for i in range(3)
    ]  # 9 samples

    RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5), max_samples_per_request=4).write(
        many
    )

    sent = [decode_write_request(r.body) for r in receiver.requests]
    assert [sum(len(s.samples) for s in batch) for batch in sent] == [4, 4, 1]
    rejoined: dict[str, list[tuple[int, float]]] = {}
    for batch in sent:
        for series in batch:
            rejoined.setdefault(series.labels["i"], []).extend(series.samples)
    assert rejoined == {str(i): [(1, 1.0), (2, 2.0), (3, 3.0)] for i in range(3)}


def test_nothing_to_write_sends_nothing(receiver: Receiver) -> None:
    RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write([])
    assert receiver.requests == []


def test_batches_of_an_exact_fit() -> None:
    one = TimeSeries({"__name__": "m"}, [(1, 1.0), (2, 2.0)])
    assert [len(b) for b in batches([one, one], 2)] == [1, 1]
    assert list(batches([], 2)) == []


def test_encode_decode_round_trip() -> None:
    first, second = decode_write_request(encode_write_request(SERIES))

    assert first == SERIES[0]
    assert second.labels == SERIES[1].labels
    ((timestamp, value),) = second.samples
    assert timestamp == 1_700_000_060_000
    assert is_stale_marker(value)  # the NaN payload survives encoding


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_transient(receiver: Receiver, status: int) -> None:
    receiver.answers.append(Answer(status, body=b"storage is sad"))

    with pytest.raises(TransientError, match=f"HTTP {status}: storage is sad") as info:
        RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write(SERIES)
    assert info.value.delay is None


def test_429_is_transient_with_retry_after_seconds(receiver: Receiver) -> None:
    receiver.answers.append(Answer(429, {"Retry-After": "7"}, b"slow down"))

    with pytest.raises(TransientError, match="HTTP 429") as info:
        RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write(SERIES)
    assert info.value.delay == 7.0


def test_retry_after_as_http_date_counts_from_the_response_date(receiver: Receiver) -> None:
    # The loopback server stamps its own Date header with the current time.
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    receiver.answers += [Answer(503, {"Retry-After": later}), Answer(503, {"Retry-After": _PAST})]
    client = RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5))

    delays = []
    for _ in range(2):
        with pytest.raises(TransientError) as info:
            client.write(SERIES)
        delays.append(info.value.delay)

    assert delays[0] is not None
    assert 3590 <= delays[0] <= 3601
    assert delays[1] == 0.0


_PAST = "Wed, 21 Oct 2015 07:28:00 GMT"


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT", "Date": _PAST}, 30.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, None),  # no Date to measure from
        ({"Retry-After": "soon", "Date": _PAST}, None),
        ({"Retry-After": "120"}, 120.0),
        ({}, None),
    ],
)
def test_retry_after_parsing(headers: dict[str, str], delay: float | None) -> None:
    response = requests.Response()
    response.headers.update(headers)
    assert _retry_after(response) == delay


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413])
def test_other_4xx_is_permanent(receiver: Receiver, status: int) -> None:
    receiver.answers.append(Answer(status, body=b"out of order sample"))

    with pytest.raises(PermanentError, match=f"HTTP {status}: out of order sample"):
        RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write(SERIES)


def test_redirect_is_not_followed_and_is_permanent(receiver: Receiver) -> None:
    receiver.answers.append(Answer(302, {"Location": "/elsewhere"}))

    with pytest.raises(PermanentError, match="HTTP 302"):
        RemoteWriteClient(HttpClientConfig(receiver.url, timeout=5)).write(SERIES)
    assert len(receiver.requests) == 1


def test_a_failure_stops_the_remaining_requests(receiver: Receiver) -> None:
    receiver.answers += [Answer(204), Answer(500)]
    many = [TimeSeries({"__name__": "m", "i": str(i)}, [(1, 1.0)]) for i in range(5)]

    with pytest.raises(TransientError):
        RemoteWriteClient(
            HttpClientConfig(receiver.url, timeout=5), max_samples_per_request=1
        ).write(many)
    assert len(receiver.requests) == 2


def test_timeout_is_transient(receiver: Receiver) -> None:
    receiver.answers.append(Answer(204, delay=1.0))

    with pytest.raises(TransientError, match="timed out"):
        RemoteWriteClient(HttpClientConfig(receiver.url, timeout=0.2)).write(SERIES)


def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more.
    with pytest.raises(TransientError, match="failed to connect"):
        RemoteWriteClient(
            HttpClientConfig(f"http://127.0.0.1:{port}/api/v1/write", timeout=2)
        ).write(SERIES)


def test_max_samples_per_request_below_one_is_a_config_error() -> None:
    # The other settings are validated once, in the remote_write: section
    # (tests/unit/guardian/app/test_http_client_settings.py).
    config = HttpClientConfig("http://127.0.0.1:9/api/v1/write", timeout=5)
    with pytest.raises(ConfigError) as info:
        RemoteWriteClient(config, max_samples_per_request=0)
    assert info.value.field == "remote_write.max_samples_per_request"


def test_https_with_a_private_ca_and_a_client_certificate(tls_receiver: Receiver, pki: Pki) -> None:
    tls = TlsConfig(ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key)
    client = RemoteWriteClient(HttpClientConfig(tls_receiver.url, timeout=5, tls=tls))

    client.write(SERIES)

    assert [len(decode_write_request(r.body)) for r in tls_receiver.requests] == [2]


def test_https_without_the_ca_or_without_a_client_certificate_fails(
    tls_receiver: Receiver, pki: Pki
) -> None:
    client_cert = TlsConfig(cert_file=pki.client_cert, key_file=pki.client_key)
    unknown_ca = RemoteWriteClient(HttpClientConfig(tls_receiver.url, timeout=5, tls=client_cert))
    only_ca = TlsConfig(ca_file=pki.ca)
    no_client_cert = RemoteWriteClient(HttpClientConfig(tls_receiver.url, timeout=5, tls=only_ca))

    with pytest.raises(TransientError, match="CERTIFICATE_VERIFY_FAILED"):
        unknown_ca.write(SERIES)
    with pytest.raises(TransientError):
        no_client_cert.write(SERIES)
    assert tls_receiver.requests == []


def test_a_ca_file_swapped_for_a_fifo_fails_the_write_without_blocking(
    tls_receiver: Receiver, pki: Pki, tmp_path: Path
) -> None:
    """requests hands the paths to ssl at each connect: they are checked just before,
    so a FIFO is a permanent error naming it, not a connect that blocks forever."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(pki.ca.read_bytes())
    client = RemoteWriteClient(HttpClientConfig(tls_receiver.url, tls=TlsConfig(ca_file=ca)))
    ca.unlink()
    os.mkfifo(ca)
    with pytest.raises(PermanentError, match=r"ca\.pem: not a regular file \(a FIFO\)"):
        client.write(SERIES)
    assert tls_receiver.requests == []
