"""A thin JSON layer over the real ``kubernetes`` ApiClient: any path, merge patches.

The generated typed APIs send strategic merge patches for dict bodies (CRDs reject
those with 415) and cover only built-in kinds; remediation needs merge patches on any
kind and ``/scale`` on custom ones, so it speaks REST through the client's own
transport, auth and TLS. API errors become PermanentError / TransientError subclasses.

Their messages never show a credential: the client's token, password and proxy or server
URL userinfo are scrubbed from every text that comes from the server or the library
(a proxy or an apiserver in front may echo a header), and the library's exception is
not chained.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from guardian_common.errors import PermanentError, TransientError
from guardian_common.redact import Secrets

logger = logging.getLogger(__name__)

FIELD_MANAGER = "gpu-guardian"
MERGE_PATCH = "application/merge-patch+json"

Obj = dict[str, Any]


class KubeApiError(Exception):
    """Mixin carrying the HTTP status and the Status reason of a failed call."""

    status: int = 0
    reason: str = ""


class Conflict(TransientError, KubeApiError):
    """409: the object changed since we read it (or already exists). Read again and re-plan."""


class NotFound(PermanentError, KubeApiError):
    """404: the object is gone. Drop the action."""


class Forbidden(PermanentError, KubeApiError):
    """403: RBAC does not allow this call. Retrying cannot help; fix the ClusterRole."""


class Rejected(PermanentError, KubeApiError):
    """Another 4xx: the request itself is wrong."""


class Unavailable(TransientError, KubeApiError):
    """429, 5xx, timeouts and connection failures: try again later."""


def client_secrets(api_client: Any) -> Secrets:
    """The credentials of a ``kubernetes`` ApiClient's configuration as it is now (an
    in-cluster token is re-read by the library, so this is asked at error time)."""
    config = getattr(api_client, "configuration", None)
    secrets = Secrets()
    secrets.add_url_credentials(getattr(config, "host", None))
    secrets.add_url_credentials(getattr(config, "proxy", None))
    for value in (getattr(config, "api_key", None) or {}).values():
        if isinstance(value, str):
            secrets.add(value)
            secrets.add(value.partition(" ")[2])  # "Bearer <token>"
    username, password = getattr(config, "username", None), getattr(config, "password", None)
    if isinstance(password, str) and password:
        secrets.add_basic(username if isinstance(username, str) else "", password)
    return secrets


def _error(response: Any, method: str, path: str, secrets: Secrets) -> Exception:
    """The typed error for a non-2xx ``response`` of ``method path``."""
    status = int(response.status)
    body: bytes = response.data or b""
    retry_after = response.getheader("Retry-After")
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    message = str(payload.get("message") or body[:200].decode("utf-8", "replace"))
    reason = str(payload.get("reason") or "")
    text = secrets.scrub(f"{method} {path}: {status} {reason}: {message}")
    err: KubeApiError
    if status == 409:
        err = Conflict(text)
    elif status == 404:
        err = NotFound(text)
    elif status == 403:
        err = Forbidden(text)
    elif status == 429 or status >= 500:
        delay = float(retry_after) if retry_after and retry_after.isdigit() else None
        err = Unavailable(text, delay=delay)
    else:
        err = Rejected(text)
    err.status = status
    err.reason = reason
    return err


class KubeRest:
    """JSON requests through a configured ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: Any, *, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Sequence[tuple[str, str]] = (),
    ) -> Obj:
        self.before_request(method)
        headers = {"Accept": "application/json", "Content-Type": content_type}
        client = self.api_client
        try:
            verb, url, hdrs, data, _ = client.param_serialize(
                method,
                path,
                query_params=list(query) or None,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = client.call_api(
                verb, url, header_params=hdrs, body=data, _request_timeout=self.timeout
            )
            response.read()
        except Exception as exc:  # urllib3 and socket errors: the API may come back
            detail = client_secrets(client).scrub(f"cannot connect: {_root_cause(exc)}")
            raise Unavailable(f"{method} {path}: {detail}") from None
        status = int(response.status)
        if not 200 <= status < 300:
            raise _error(response, method, path, client_secrets(client))
        if not response.data:
            return {}
        result: Obj = json.loads(response.data)
        return result

    def before_request(self, method: str) -> None:
        """Called before every request; a subclass may refuse it by raising."""

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> Obj:
        return self.request("GET", path, query=query)

    def merge_patch(self, path: str, patch: Mapping[str, Any]) -> Obj:
        return self.request(
            "PATCH",
            path,
            body=dict(patch),
            content_type=MERGE_PATCH,
            query=[("fieldManager", FIELD_MANAGER)],
        )

    def create(self, path: str, obj: Mapping[str, Any]) -> Obj:
        return self.request("POST", path, body=dict(obj), query=[("fieldManager", FIELD_MANAGER)])

    def replace(self, path: str, obj: Mapping[str, Any]) -> Obj:
        return self.request("PUT", path, body=dict(obj), query=[("fieldManager", FIELD_MANAGER)])

    def delete(self, path: str, preconditions: Mapping[str, str]) -> Obj:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": dict(preconditions)}
        return self.request("DELETE", path, body=body)


def _root_cause(exc: BaseException) -> str:
    """The innermost reason of a urllib3/socket failure, e.g. "Connection refused"."""
    found: BaseException = exc
    for _ in range(10):
        reason = getattr(found, "reason", None)
        nxt = reason if isinstance(reason, BaseException) else found.__cause__ or found.__context__
        if nxt is None:
            break
        found = nxt
    if isinstance(found, OSError) and found.strerror:
        return str(found.strerror)
    return " ".join(str(found).split()) or type(found).__name__


def object_path(api_version: str, plural: str, namespace: str | None, name: str = "") -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    tail = f"/{name}" if name else ""
    return f"{base}{ns}/{plural}{tail}"
