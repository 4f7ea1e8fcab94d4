"""Prometheus remote write 1.0 client: protobuf ``WriteRequest``, snappy block compression.

The receiver is Prometheus with ``--web.enable-remote-write-receiver`` (``/api/v1/write``) or
Thanos Receive (``/api/v1/receive``). Errors follow the remote-write spec: 5xx and 429 may
succeed later (:class:`TransientError`, with ``Retry-After`` as the delay hint); any other
non-2xx answer means the data was refused and resending it cannot help (:class:`PermanentError`).
"""

from __future__ import annotations

import email.utils
import importlib.metadata
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Self
from urllib.parse import urlsplit

import cramjam
import requests

from guardian.adapters import _remote_write_pb2 as pb
from guardian.model.series import TimeSeries
from guardian_common.errors import ConfigError, PermanentError, TransientError

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "0.1.0"
_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_BODY_IN_ERROR = 512

# Headers the protocol or the auth options own; Prometheus refuses them in `headers` too.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "retry-after",
        "transfer-encoding",
        "user-agent",
        "www-authenticate",
        "x-prometheus-remote-write-version",
    }
)


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
    """Writes series to one remote-write endpoint. Thread-safe; requests are serialised."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float,
        headers: Mapping[str, str] = _NO_HEADERS,
        bearer_token_file: Path | None = None,
        basic_auth: tuple[str, str] | None = None,
        ca_file: Path | None = None,
        cert_file: Path | None = None,
        key_file: Path | None = None,
        max_samples_per_request: int = 2000,
        session: requests.Session | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"not an http(s) URL: {url!r}", field="remote_write.url")
        if not timeout > 0:
            raise ConfigError(f"must be > 0, got {timeout!r}", field="remote_write.timeout")
        if max_samples_per_request < 1:
            raise ConfigError(
                f"must be >= 1, got {max_samples_per_request!r}",
                field="remote_write.max_samples_per_request",
            )
        reserved = sorted(name for name in headers if name.lower() in _RESERVED_HEADERS)
        if reserved:
            raise ConfigError(
                f"{', '.join(reserved)} cannot be set here; the client sets it",
                field="remote_write.headers",
            )
        if bearer_token_file is not None and basic_auth is not None:
            raise ConfigError(
                "bearer_token_file and basic_auth are mutually exclusive",
                field="remote_write.basic_auth",
            )
        if (cert_file is None) != (key_file is None):
            raise ConfigError(
                "cert_file and key_file must be given together", field="remote_write.cert_file"
            )
        for option, path in (
            ("ca_file", ca_file),
            ("cert_file", cert_file),
            ("key_file", key_file),
        ):
            if path is not None and not path.is_file():
                raise ConfigError(f"no such file: {path}", field=f"remote_write.{option}")

        self.url = url
        self._timeout = timeout
        self._max_samples = max_samples_per_request
        self._bearer_token_file = bearer_token_file
        self._basic_auth = basic_auth
        self._verify: bool | str = str(ca_file) if ca_file is not None else True
        self._cert = (str(cert_file), str(key_file)) if cert_file and key_file else None
        self._headers = {
            **headers,
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

    def _request_headers(self) -> dict[str, str]:
        if self._bearer_token_file is None:
            return self._headers
        # Re-read every time: projected service-account tokens are rotated in place.
        try:
            token = self._bearer_token_file.read_text().strip()
        except OSError as exc:
            raise PermanentError(
                f"remote write: cannot read bearer token file {self._bearer_token_file}: {exc}"
            ) from exc
        if not token:
            raise PermanentError(
                f"remote write: bearer token file {self._bearer_token_file} is empty"
            )
        return {**self._headers, "Authorization": f"Bearer {token}"}

    def _post(self, body: bytes, batch: Sequence[TimeSeries]) -> None:
        headers = self._request_headers()
        samples = sum(len(item.samples) for item in batch)
        try:
            with self._lock:
                response = self._session.post(
                    self.url,
                    data=body,
                    headers=headers,
                    timeout=self._timeout,
                    auth=self._basic_auth,
                    verify=self._verify,
                    cert=self._cert,
                    allow_redirects=False,
                )
        except requests.Timeout as exc:
            raise TransientError(
                f"remote write to {self.url} timed out after {self._timeout}s: {exc}"
            ) from exc
        except requests.ConnectionError as exc:
            raise TransientError(f"remote write to {self.url} failed to connect: {exc}") from exc
        except (requests.RequestException, OSError) as exc:
            raise PermanentError(f"remote write to {self.url} failed: {exc}") from exc

        status = response.status_code
        if 200 <= status < 300:
            logger.debug("remote write: %s series, %s samples to %s", len(batch), samples, self.url)
            return
        detail = response.text[:_BODY_IN_ERROR].strip()
        message = f"remote write to {self.url} answered HTTP {status}: {detail}"
        if status == 429 or status >= 500:
            raise TransientError(message, delay=_retry_after(response))
        raise PermanentError(message)


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
