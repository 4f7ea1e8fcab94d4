"""Alertmanager API v2 client: post alerts, list alerts with their silence and inhibition
state, read silences (Alertmanager v0.25.0 ``api/v2/openapi.yaml``).

The body of ``POST /api/v2/alerts`` is written as Prometheus 2.42 writes it (Go's
``encoding/json`` of ``models.PostableAlerts``): keys in the order ``annotations``
(left out when empty), ``endsAt``, ``startsAt``, ``generatorURL``, ``labels``; label maps
sorted; times in RFC 3339 with milliseconds (truncated), UTC ``Z``; ``<``, ``>`` and ``&``
escaped as ``\\u003c``, ``\\u003e`` and ``\\u0026``. Any 2xx is success; 5xx, 429 and
connection errors may succeed later (:class:`AlertmanagerUnavailable`), other statuses
refuse the request for good (:class:`AlertmanagerRejected`).
"""

from __future__ import annotations

import importlib.metadata
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from guardian.adapters.http_credentials import EndpointClient
from guardian.model.alertmanager_api import AlertStatus, PostableAlert, Silence, StoredAlert
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from guardian.model.times import parse_rfc3339
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

_BODY_IN_ERROR = 300


class AlertmanagerUnavailable(TransientError):
    """Alertmanager did not answer, or answered 5xx/429: trying again later may work."""


class AlertmanagerRejected(PermanentError):
    """Alertmanager refused the request (4xx other than 429), or a credential file is
    unreadable: sending the same request again cannot help."""


# ------------------------------------------------------------------ wire format
_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _go_string(text: str) -> str:
    """A JSON string as Go's encoding/json writes it (HTML-safe, U+2028/9 escaped)."""
    out = ['"']
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_map(labels: Mapping[str, str]) -> str:
    inner = ",".join(f"{_go_string(k)}:{_go_string(v)}" for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def format_time(ts: float) -> str:
    """strfmt.DateTime: RFC 3339, milliseconds truncated, UTC ``Z``."""
    ms = math.floor(round(ts * 1_000_000) / 1000)  # via microseconds: no float ..999 ms
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return f"{moment.strftime('%Y-%m-%dT%H:%M:%S')}.{ms % 1000:03d}Z"


def encode_alerts(alerts: Sequence[PostableAlert]) -> bytes:
    """The ``POST /api/v2/alerts`` body for ``alerts``."""
    items = []
    for alert in alerts:
        parts = []
        if alert.annotations:
            parts.append(f'"annotations":{_go_map(alert.annotations)}')
        parts.append(f'"endsAt":{_go_string(format_time(alert.ends_at))}')
        parts.append(f'"startsAt":{_go_string(format_time(alert.starts_at))}')
        if alert.generator_url:
            parts.append(f'"generatorURL":{_go_string(alert.generator_url)}')
        parts.append(f'"labels":{_go_map(alert.labels)}')
        items.append("{" + ",".join(parts) + "}")
    return ("[" + ",".join(items) + "]").encode("utf-8")


def _time(value: Any) -> float:
    parsed = parse_rfc3339(str(value)) if value else None
    return parsed if parsed is not None else 0.0


def parse_alerts(body: Any) -> tuple[StoredAlert, ...]:
    """``GET /api/v2/alerts`` (``models.GettableAlerts``)."""
    if not isinstance(body, list):
        raise AlertmanagerUnavailable(f"unexpected alerts body: {str(body)[:200]}")
    out = []
    for item in body:
        status = item.get("status") or {}
        try:
            state = AlertStatus(status.get("state", "unprocessed"))
        except ValueError:
            state = AlertStatus.UNPROCESSED
        out.append(
            StoredAlert(
                LabelSet({str(k): str(v) for k, v in (item.get("labels") or {}).items()}),
                str(item.get("fingerprint", "")),
                state,
                tuple(str(s) for s in status.get("silencedBy") or ()),
                tuple(str(s) for s in status.get("inhibitedBy") or ()),
            )
        )
    return tuple(out)


def parse_silences(body: Any) -> dict[str, Silence]:
    """``GET /api/v2/silences`` (``models.GettableSilences``), by id."""
    if not isinstance(body, list):
        raise AlertmanagerUnavailable(f"unexpected silences body: {str(body)[:200]}")
    return {
        str(item.get("id", "")): Silence(
            str(item.get("id", "")),
            str(item.get("createdBy", "")),
            str(item.get("comment", "")),
            _time(item.get("startsAt")),
            _time(item.get("endsAt")),
            str((item.get("status") or {}).get("state", "")),
        )
        for item in body
    }


def _version() -> str:
    try:
        return importlib.metadata.version("gpu-guardian")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# ------------------------------------------------------------------ client
class AlertmanagerClient(EndpointClient):
    """One Alertmanager. ``config.url`` is its base URL, with any path prefix (``/am``)."""

    kind = "Alertmanager"
    rejected = AlertmanagerRejected
    unavailable = AlertmanagerUnavailable

    def __init__(self, config: HttpClientConfig, *, session: requests.Session | None = None):
        super().__init__(config, session=session)
        self._base = urlsplit(config.url)
        self._headers = {**config.headers, "User-Agent": f"gpu-guardian/{_version()}"}

    def post_alerts(self, body: bytes) -> None:
        """POST an encoded alert list. Raises AlertmanagerUnavailable/AlertmanagerRejected."""
        headers = {**self._headers, "Content-Type": "application/json"}
        self._request("POST", "/alerts", data=body, headers=headers)

    def alerts(self, filters: Iterable[str] = ()) -> tuple[StoredAlert, ...]:
        """Active, silenced and inhibited alerts matching every ``filters`` matcher
        (``alertname=~"GpuIdle|..."``); resolved alerts are never listed."""
        params: list[tuple[str, str]] = [
            ("active", "true"),
            ("silenced", "true"),
            ("inhibited", "true"),
            *(("filter", f) for f in filters),
        ]
        return parse_alerts(self._get_json("/alerts", params=params))

    def silences(self) -> dict[str, Silence]:
        """Every silence Alertmanager keeps (active, pending, and expired for 120h)."""
        return parse_silences(self._get_json("/silences"))

    def _url(self, path: str) -> str:
        """``/api/v2`` + ``path`` under the base URL's path prefix, its query kept."""
        base = self._base
        return urlunsplit(base._replace(path=f"{base.path.rstrip('/')}/api/v2{path}"))

    def _get_json(self, path: str, **kwargs: Any) -> Any:
        response = self._request("GET", path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise AlertmanagerUnavailable(
                f"Alertmanager {self.name}: {path} answered no JSON"
            ) from exc

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("headers", self._headers)
        response = self._endpoint.send(self._session, method, self._url(path), **kwargs)
        status = response.status_code
        if 200 <= status < 300:
            return response
        detail = self._secrets.scrub(response.text[:_BODY_IN_ERROR].strip())
        message = f"Alertmanager {self.name}: {method} {path} answered HTTP {status}: {detail}"
        if status == 429 or status >= 500:
            raise AlertmanagerUnavailable(message)
        raise AlertmanagerRejected(message)
