"""Read ``/api/v1/status`` and ``/api/v1/explain`` from a running controller
(``guardian status --url``, ``guardian explain --url``)."""

from __future__ import annotations

from typing import Any

import requests

from guardian_common.errors import PermanentError, TransientError
from guardian_common.redact import Secrets, redact_url

STATUS_PATH = "/api/v1/status"
EXPLAIN_PATH = "/api/v1/explain"


def api_url(base: str, path: str = STATUS_PATH) -> str:
    """The endpoint ``path`` of the controller at ``base`` (its address, or the full URL)."""
    target = base.rstrip("/")
    return target if target.endswith(path) else target + path


def status_url(base: str) -> str:
    return api_url(base, STATUS_PATH)


def fetch_status(base: str, timeout: float = 10.0) -> dict[str, Any]:
    """The ``data`` object of the controller's status answer. Raises TransientError when
    it cannot be reached or answers 5xx/429, PermanentError for any other answer."""
    return fetch_api(api_url(base, STATUS_PATH), {}, timeout)


def fetch_explain(
    base: str, workload: str, at: str | None, timeout: float = 30.0
) -> dict[str, Any]:
    params = {"workload": workload, **({"at": at} if at else {})}
    return fetch_api(api_url(base, EXPLAIN_PATH), params, timeout)


def fetch_api(url: str, params: dict[str, str], timeout: float) -> dict[str, Any]:
    shown = redact_url(url)
    secrets = Secrets()
    secrets.add_url_credentials(url)
    try:
        response = requests.get(url, params=params, timeout=timeout)
    except requests.RequestException as exc:
        raise TransientError(f"cannot reach {shown}: {secrets.scrub(str(exc))}") from None
    code = response.status_code
    if code == 429 or code >= 500:
        raise TransientError(f"{shown} answered HTTP {code}")
    if code != 200:
        error = _error(response)
        raise PermanentError(f"{shown} answered HTTP {code}" + (f": {error}" if error else ""))
    try:
        body = response.json()
    except ValueError:
        raise PermanentError(f"{shown} did not answer JSON") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or body.get("status") != "success":
        raise PermanentError(f"{shown} answered {secrets.scrub(str(body)[:200])}")
    return data


def _error(response: requests.Response) -> str:
    """The ``error`` of a Prometheus-style error answer, cut short ("" if none)."""
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("error", ""))[:300] if isinstance(body, dict) else ""
