"""Read ``/api/v1/status`` from a running controller (``guardian status --url``)."""

from __future__ import annotations

from typing import Any

import requests

from guardian_common.errors import PermanentError, TransientError
from guardian_common.redact import Secrets, redact_url

STATUS_PATH = "/api/v1/status"


def status_url(base: str) -> str:
    """The status endpoint of the controller at ``base`` (its address, or the full URL)."""
    target = base.rstrip("/")
    return target if target.endswith(STATUS_PATH) else target + STATUS_PATH


def fetch_status(base: str, timeout: float = 10.0) -> dict[str, Any]:
    """The ``data`` object of the controller's status answer. Raises TransientError when
    it cannot be reached or answers 5xx/429, PermanentError for any other answer."""
    url = status_url(base)
    shown = redact_url(url)
    secrets = Secrets()
    secrets.add_url_credentials(url)
    try:
        response = requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        raise TransientError(f"cannot reach {shown}: {secrets.scrub(str(exc))}") from None
    code = response.status_code
    if code == 429 or code >= 500:
        raise TransientError(f"{shown} answered HTTP {code}")
    if code != 200:
        raise PermanentError(f"{shown} answered HTTP {code}")
    try:
        body = response.json()
    except ValueError:
        raise PermanentError(f"{shown} did not answer JSON") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or body.get("status") != "success":
        raise PermanentError(f"{shown} answered {secrets.scrub(str(body)[:200])}")
    return data
