"""Prometheus remote write 1.0 client: protobuf ``WriteRequest``, snappy block compression.

The receiver is Prometheus with ``--web.enable-remote-write-receiver`` (``/api/v1/write``) or
Thanos Receive (``/api/v1/receive``). Errors follow the remote-write spec: 5xx and 429 may
succeed later (:class:`TransientError`, with ``Retry-After`` as the delay hint); any other
non-2xx answer means the data was refused and resending it cannot help (:class:`PermanentError`).
Messages show the URL without userinfo and scrub every server or library text of the
endpoint's secrets (see :mod:`guardian.adapters.http_credentials`).
"""

from __future__ import annotations

import email.utils
import importlib.metadata
import logging
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Self

import cramjam
import requests

from guardian.adapters import _remote_write_pb2 as pb
from guardian.adapters.http_credentials import (
    CredentialError,
    check_tls_now,
    credentials,
    secrets_of,
    shown_url,
)
from guardian.model.http_client import HttpClientConfig
from guardian.model.series import TimeSeries
from guardian_common.errors import ConfigError, PermanentError, TransientError

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "0.1.0"
_BODY_IN_ERROR = 512


def encode_write_request(series: Sequence[TimeSeries]) -> bytes:
    """The snappy-compressed ``WriteRequest`` body for ``series``, labels sorted by name."""
    request = pb.WriteRequest()
    for item in series:
        message = request.timeseries.add()
        for name, text in sorted(item.labels.items()):
            message.labels.add(name=name, value=text)
        for timestamp, value in item.samples:
            message.samples.add(timestamp=timestamp, value=value)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def decode_write_request(body: bytes) -> list[TimeSeries]:
    """The series in a snappy-compressed ``WriteRequest`` body (for receivers and tests)."""
    request = pb.WriteRequest.FromString(bytes(cramjam.snappy.decompress_raw(body)))
    return [
        TimeSeries(
            {label.name: label.value for label in message.labels},
            [(sample.timestamp, sample.value) for sample in message.samples],
        )
        for message in request.timeseries
    ]


def batches(series: Sequence[TimeSeries], max_samples: int) -> Iterator[list[TimeSeries]]:
    """Split ``series`` into requests of at most ``max_samples`` samples each.

    A series with more samples than fit is cut into consecutive pieces, so each series'
    samples still arrive in time order.
    """
    batch: list[TimeSeries] = []
    room = max_samples
    for item in series:
        samples = list(item.samples)
        while samples:
            piece, samples = samples[:room], samples[room:]
            batch.append(TimeSeries(item.labels, piece))
            room -= len(piece)
            if room == 0:
                yield batch
                batch, room = [], max_samples
    if batch:
        yield batch


class RemoteWriteClient:
    """Writes series to one remote-write endpoint. Thread-safe; requests are serialised.

    ``config`` comes validated from the settings (``remote_write:``); its URL is the full
    write endpoint. Credential files are read again for every request.
    """

    def __init__(
        self,
        config: HttpClientConfig,
        *,
        max_samples_per_request: int = 2000,
        session: requests.Session | None = None,
    ) -> None:
        if max_samples_per_request < 1:
            raise ConfigError(
                f"must be >= 1, got {max_samples_per_request!r}",
                field="remote_write.max_samples_per_request",
            )
        self.url = config.url
        self.shown_url = shown_url(config)
        self._secrets = secrets_of(config)
        self._timeout = config.timeout
        self._max_samples = max_samples_per_request
        self._auth = credentials(config, self._secrets)
        self._config = config
        self._verify = config.tls.verify
        self._cert = config.tls.cert
        self._headers = {
            **config.headers,
            "Content-Encoding": "snappy",
            "Content-Type": "application/x-protobuf",
            "X-Prometheus-Remote-Write-Version": PROTOCOL_VERSION,
            "User-Agent": f"gpu-guardian/{_version()}",
        }
        self._session = session if session is not None else requests.Session()
        self._lock = threading.Lock()

    def write(self, series: Sequence[TimeSeries]) -> None:
        """Send ``series``, in requests of at most ``max_samples_per_request`` samples.

        Raises :class:`TransientError` or :class:`PermanentError` at the first request that
        fails; earlier requests of the same call were accepted. Resending them is harmless,
        since a receiver ignores a sample identical to one it has.
        """
        for batch in batches(series, self._max_samples):
            self._post(encode_write_request(batch), batch)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _post(self, body: bytes, batch: Sequence[TimeSeries]) -> None:
        samples = sum(len(item.samples) for item in batch)
        try:
            with self._lock:
                check_tls_now(self._config)
                response = self._session.post(
                    self.url,
                    data=body,
                    headers=self._headers,
                    timeout=self._timeout,
                    auth=self._auth,
                    verify=self._verify,
                    cert=self._cert,
                    allow_redirects=False,
                )
        except CredentialError as exc:
            raise PermanentError(f"remote write to {self.shown_url}: {exc}") from exc
        except (requests.RequestException, OSError) as exc:
            raise self._request_error(exc) from None

        status = response.status_code
        if 200 <= status < 300:
            logger.debug(
                "remote write: %s series, %s samples to %s", len(batch), samples, self.shown_url
            )
            return
        detail = self._secrets.scrub(response.text[:_BODY_IN_ERROR].strip())
        message = f"remote write to {self.shown_url} answered HTTP {status}: {detail}"
        if status == 429 or status >= 500:
            raise TransientError(message, delay=_retry_after(response))
        raise PermanentError(message)

    def _request_error(self, exc: Exception) -> TransientError | PermanentError:
        """The error for a request that got no answer; the library's text scrubbed."""
        where = f"remote write to {self.shown_url}"
        detail = self._secrets.scrub(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, requests.Timeout):
            return TransientError(f"{where} timed out after {self._timeout}s: {detail}")
        if isinstance(exc, requests.ConnectionError):
            return TransientError(f"{where} failed to connect: {detail}")
        return PermanentError(f"{where} failed: {detail}")


def _retry_after(response: requests.Response) -> float | None:
    """``Retry-After`` in seconds: delta-seconds, or an HTTP date measured from ``Date``.

    An HTTP date is compared with the response's own ``Date`` header rather than the local
    clock, so clock skew cannot turn it into a wrong delay; without ``Date`` it is ignored.
    """
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        until = email.utils.parsedate_to_datetime(value)
        sent = email.utils.parsedate_to_datetime(response.headers.get("Date", ""))
    except (TypeError, ValueError):
        return None
    if until.tzinfo is None or sent.tzinfo is None:
        return None
    return max(0.0, (until - sent).total_seconds())


def _version() -> str:
    try:
        return importlib.metadata.version("gpu-guardian")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
