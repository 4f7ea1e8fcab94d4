"""Instant and range queries against Prometheus or Thanos Query, over prometheus-api-client.

The client's ``custom_query`` returns only ``data.result``: it drops the response's
``warnings`` (Thanos partial responses arrive as HTTP 200 with warnings) and folds every
non-200 status into one exception. So the query is sent through the client's own
configured session (``PrometheusConnect._session``, with its auth, TLS and retry adapter)
and the whole body is read here. Statuses map to error types: 400 bad query and 422
execution errors are permanent, 503 (query timeout/overload), other 5xx, 429 and
connection errors or timeouts are transient. 503 is never retried: Prometheus answers 503
to a query that timed out, and running it again at once only adds load.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import requests
from prometheus_api_client import PrometheusConnect
from urllib3.exceptions import MaxRetryError, NewConnectionError, TimeoutError
from urllib3.util.retry import Retry

from guardian.adapters.http_client import CredentialError, credentials
from guardian.model.history import RangeResult, RangeSeries, TimeRange
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

QueryObserver = Callable[[str, float], None]  # (outcome, seconds)
_T = TypeVar("_T")


@dataclass(frozen=True)
class PrometheusAccess:
    """How to reach the query API: the shared client config plus what is Prometheus's own."""

    http: HttpClientConfig
    thanos: bool = False  # Thanos Query: no partial responses, dedup, warnings mean partial
    method: Literal["GET", "POST"] = "GET"


class QueryFailedError(TransientError):
    """The query could not be answered now (connection, timeout, 503, 5xx, 429)."""

    def __init__(self, message: str, *, reason: str, delay: float | None = None) -> None:
        super().__init__(message, delay=delay)
        self.reason = reason


class QueryRejectedError(PermanentError):
    """Prometheus rejected the query (400 bad_data, 422 execution, 401/403 auth)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _session(http: HttpClientConfig) -> requests.Session:
    session = requests.Session()
    session.verify = http.tls.verify
    session.cert = http.tls.cert
    return session


def _error_text(response: requests.Response) -> tuple[str, str]:
    try:
        body = response.json()
        return str(body.get("errorType", "")), str(body.get("error", ""))
    except ValueError:
        return "", response.text[:500]


def _is_timeout(exc: requests.RequestException) -> bool:
    if isinstance(exc, requests.Timeout):
        return True
    # With a Retry adapter, urllib3 wraps a read timeout in MaxRetryError and requests
    # raises it as a ConnectionError.
    cause = exc.args[0] if exc.args else None
    reason = getattr(cause, "reason", None)
    # NewConnectionError (refused) subclasses ConnectTimeoutError in urllib3; it is not one.
    return (
        isinstance(cause, MaxRetryError)
        and isinstance(reason, TimeoutError)
        and not isinstance(reason, NewConnectionError)
    )


def _parse_value(pair: Any) -> float:
    return float(pair[1])


def _parse(body: Any, thanos: bool) -> QueryResult:
    if not isinstance(body, dict) or body.get("status") != "success":
        raise QueryFailedError(
            f"unexpected response body: {str(body)[:300]}", reason="bad_response"
        )
    data = body.get("data") or {}
    kind = data.get("resultType")
    result = data.get("result")
    warnings = tuple(str(w) for w in body.get("warnings") or ())
    if kind == "vector":
        samples = tuple(
            PromSample(LabelSet(item.get("metric") or {}), _parse_value(item["value"]))
            for item in result or ()
        )
    elif kind == "scalar":
        # Prometheus's rule engine turns a scalar into one sample without labels.
        samples = (PromSample(LabelSet(), _parse_value(result)),)
    else:
        raise QueryRejectedError(
            f"query result is a {kind}, not an instant vector or scalar", reason="bad_query"
        )
    # With partial_response=false Thanos should refuse a partial answer; if it still warns,
    # the warning is about missing stores, so treat it as partial.
    return QueryResult(samples, warnings, partial=bool(warnings) and thanos)


def _parse_matrix(body: Any, thanos: bool) -> RangeResult:
    if not isinstance(body, dict) or body.get("status") != "success":
        raise QueryFailedError(
            f"unexpected response body: {str(body)[:300]}", reason="bad_response"
        )
    data = body.get("data") or {}
    if data.get("resultType") != "matrix":
        raise QueryRejectedError(
            f"range query result is a {data.get('resultType')}, not a matrix", reason="bad_query"
        )
    warnings = tuple(str(w) for w in body.get("warnings") or ())
    series = tuple(
        RangeSeries(
            LabelSet(item.get("metric") or {}),
            tuple((round(float(ts) * 1000), float(v)) for ts, v in item.get("values") or ()),
        )
        for item in data.get("result") or ()
    )
    return RangeResult(series, warnings, partial=bool(warnings) and thanos)


class PrometheusQuerier:
    """Instant and range queries. One instance per target."""

    def __init__(
        self,
        access: PrometheusAccess,
        *,
        observer: QueryObserver | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        session: requests.Session | None = None,
    ) -> None:
        self.access = access
        self._observer = observer
        self._monotonic = monotonic
        # No status retries (a 503 is a query timeout); one quick connect retry only.
        retry = Retry(total=1, connect=1, read=0, status=0, other=0, backoff_factor=0)
        http = access.http
        self._client = PrometheusConnect(
            url=http.url.rstrip("/"),
            headers=dict(http.headers) or None,
            retry=retry,
            auth=credentials(http),
            session=session or _session(http),
            timeout=http.timeout,
            method=access.method,
        )

    def close(self) -> None:
        self._client.close()

    def params(self, expr: str, ts: float) -> dict[str, str]:
        params = {"query": expr, "time": f"{ts:.3f}"}
        if self.access.thanos:
            params["partial_response"] = "false"
            params["dedup"] = "true"
        return params

    def range_params(self, expr: str, span: TimeRange) -> dict[str, str]:
        params = {
            "query": expr,
            "start": f"{span.start:.3f}",
            "end": f"{span.end:.3f}",
            "step": f"{span.step_ms / 1000:.3f}",
        }
        if self.access.thanos:
            params["partial_response"] = "false"
            params["dedup"] = "true"
        return params

    def query(self, expr: str, ts: float) -> QueryResult:
        """``expr`` at ``ts`` (unix seconds). Raises QueryFailedError/QueryRejectedError."""
        return self._observed(
            lambda: _parse(self._get("query", self.params(expr, ts)), self.access.thanos)
        )

    def query_range(self, expr: str, span: TimeRange) -> RangeResult:
        """``expr`` at every step of ``span``: Prometheus evaluates each step exactly as an
        instant query at that time. Raises QueryFailedError/QueryRejectedError."""
        params = self.range_params(expr, span)
        return self._observed(
            lambda: _parse_matrix(self._get("query_range", params), self.access.thanos)
        )

    def _observed(self, call: Callable[[], _T]) -> _T:
        started = self._monotonic()
        outcome = "error"
        try:
            result = call()
            outcome = "warnings" if getattr(result, "warnings", ()) else "success"
            return result
        except (QueryFailedError, QueryRejectedError) as exc:
            outcome = exc.reason
            raise
        finally:
            if self._observer is not None:
                self._observer(outcome, self._monotonic() - started)

    def _get(self, endpoint: str, params: dict[str, str]) -> Any:
        """The JSON body of a 200 answer from ``/api/v1/<endpoint>``, else the typed error."""
        client = self._client
        # Same call custom_query makes, but keeping the whole response (see module doc).
        try:
            response = client._session.request(
                method=client._method,
                url=f"{client.url}/api/v1/{endpoint}",
                params=params,
                verify=client._session.verify,
                headers=client.headers,
                auth=client.auth,
                cert=client._session.cert,
                timeout=self.access.http.timeout,
            )
        except CredentialError as exc:
            raise QueryRejectedError(str(exc), reason="auth") from exc
        except requests.RequestException as exc:
            if _is_timeout(exc):
                raise QueryFailedError(
                    f"query timed out after {self.access.http.timeout}s: {exc}",
                    reason="timeout",
                ) from exc
            raise QueryFailedError(
                f"cannot reach {client.url}: {exc}", reason="connection"
            ) from exc
        status = response.status_code
        if status == 200:
            try:
                return response.json()
            except ValueError as exc:
                raise QueryFailedError("response is not JSON", reason="bad_response") from exc
        error_type, error = _error_text(response)
        message = f"HTTP {status} {error_type}: {error}".strip()
        if status == 400:
            raise QueryRejectedError(message, reason="bad_query")
        if status == 422:
            raise QueryRejectedError(message, reason="execution")
        if status in (401, 403):
            raise QueryRejectedError(message, reason="auth")
        if status == 503:
            reason = "timeout" if error_type == "timeout" else "unavailable"
            raise QueryFailedError(message, reason=reason)
        retry_after = response.headers.get("Retry-After")
        delay = float(retry_after) if retry_after and retry_after.isdigit() else None
        if status == 429 or status >= 500:
            raise QueryFailedError(message, reason="unavailable", delay=delay)
        raise QueryRejectedError(message, reason="http_error")

    def metric_names(self) -> set[str]:
        """Every metric name the target knows (for ``rules check``)."""
        values = self._client.get_label_values("__name__")
        return {str(v) for v in values}
