"""Both HTTP clients take the one HttpClientConfig and authenticate the same way: the
password file and the bearer token file are read again for every request, so a rotated
Secret is picked up without a restart."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier, QueryRejectedError
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig, TlsConfig
from guardian.model.series import TimeSeries
from guardian_common.errors import PermanentError
from tests.unit.guardian.remote_write.conftest import Answer, Receiver

SERIES = [TimeSeries({"__name__": "ALERTS", "alertname": "GpuIdle"}, [(1_700_000_000_000, 1.0)])]
EMPTY_VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})

Send = Callable[[], None]


def _remote_write(receiver: Receiver, config: HttpClientConfig) -> Send:
    client = RemoteWriteClient(config)
    return lambda: client.write(SERIES)


def _query(receiver: Receiver, config: HttpClientConfig) -> Send:
    # The receiver answers POSTs only; queries by POST reach it just the same.
    base = replace(config, url=config.url.removesuffix("/api/v1/write"))
    querier = PrometheusQuerier(PrometheusAccess(base, method="POST"))

    def send() -> None:
        receiver.answers.append(Answer(200, body=EMPTY_VECTOR.encode()))
        querier.query("up", 1_700_000_000.0)

    return send


CLIENTS = pytest.mark.parametrize("make_client", [_remote_write, _query], ids=["write", "query"])


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@CLIENTS
def test_a_rotated_password_file_is_read_again(
    receiver: Receiver, tmp_path: Path, make_client: Callable[[Receiver, HttpClientConfig], Send]
) -> None:
    password = tmp_path / "password"
    password.write_text("first\n")
    auth = BasicAuthConfig("guardian", password_file=str(password))
    send = make_client(receiver, HttpClientConfig(receiver.url, timeout=5, basic_auth=auth))

    send()
    password.write_text("rotated")
    send()

    assert [r.headers["Authorization"] for r in receiver.requests] == [
        _basic("guardian", "first"),
        _basic("guardian", "rotated"),
    ]


@CLIENTS
def test_a_rotated_bearer_token_file_is_read_again(
    receiver: Receiver, tmp_path: Path, make_client: Callable[[Receiver, HttpClientConfig], Send]
) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    send = make_client(receiver, HttpClientConfig(receiver.url, timeout=5, bearer_token_file=token))

    send()
    token.write_text("rotated")
    send()

    assert [r.headers["Authorization"] for r in receiver.requests] == [
        "Bearer first",
        "Bearer rotated",
    ]


@CLIENTS
def test_inline_password_and_extra_headers(
    receiver: Receiver, make_client: Callable[[Receiver, HttpClientConfig], Send]
) -> None:
    config = HttpClientConfig(
        receiver.url,
        timeout=5,
        headers={"X-Scope-OrgID": "gpu"},
        basic_auth=BasicAuthConfig("u", "p"),
    )
    make_client(receiver, config)()

    headers = receiver.requests[0].headers
    assert headers["Authorization"] == _basic("u", "p")
    assert headers["X-Scope-OrgID"] == "gpu"


@CLIENTS
@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing token", "cannot read bearer token file"),
        ("empty token", "bearer token file .* is empty"),
        ("missing password", "cannot read password file"),
        ("FIFO token", r"cannot read bearer token file .*fifo: not a regular file \(a FIFO\)"),
        ("/dev/zero password", r"password file .*zero: not a regular file"),
        ("non-UTF-8 token", "bearer token file is not UTF-8 text"),
    ],
)
def test_an_unreadable_credential_is_a_permanent_error_and_nothing_is_sent(
    receiver: Receiver,
    tmp_path: Path,
    make_client: Callable[[Receiver, HttpClientConfig], Send],
    case: str,
    message: str,
) -> None:
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    os.mkfifo(tmp_path / "fifo")  # a request once blocked on it forever
    (tmp_path / "zero").symlink_to("/dev/zero")  # and read gigabytes from this
    (tmp_path / "latin1").write_bytes(b"caf\xe9\n")
    config = {
        "missing token": HttpClientConfig(receiver.url, bearer_token_file=tmp_path / "nope"),
        "empty token": HttpClientConfig(receiver.url, bearer_token_file=empty),
        "missing password": HttpClientConfig(
            receiver.url, basic_auth=BasicAuthConfig("u", password_file=tmp_path / "nope")
        ),
        "FIFO token": HttpClientConfig(receiver.url, bearer_token_file=tmp_path / "fifo"),
        "/dev/zero password": HttpClientConfig(
            receiver.url, basic_auth=BasicAuthConfig("u", password_file=tmp_path / "zero")
        ),
        "non-UTF-8 token": HttpClientConfig(receiver.url, bearer_token_file=tmp_path / "latin1"),
    }[case]
    send = make_client(receiver, config)

    with pytest.raises(PermanentError, match=message) as info:
        send()
    if make_client is _query:
        assert isinstance(info.value, QueryRejectedError)
        assert info.value.reason == "auth"
    assert receiver.requests == []


def test_tls_config_gives_requests_verify_and_cert() -> None:
    assert TlsConfig().verify is True
    assert TlsConfig(ca_file="/ca.pem").verify == "/ca.pem"
    assert TlsConfig(ca_file="/ca.pem", insecure_skip_verify=True).verify is False
    assert TlsConfig().cert is None
    assert TlsConfig(cert_file="/c.pem").cert == "/c.pem"
    assert TlsConfig(cert_file=Path("/c.pem"), key_file="/k.pem").cert == ("/c.pem", "/k.pem")
