"""Queries against Prometheus or Thanos Query: instant vectors for the rules, matrices
(range selectors, ``query_range``) for for-state restore.

Requests go through :mod:`guardian.adapters.query_transport` (kept connections, no
per-call settings work: rule templates send thousands a cycle), and the whole body is
read here, ``warnings`` included (Thanos partial responses arrive as HTTP 200 with
warnings). Statuses map to error types: 400 bad query and 422 execution errors are
permanent, 503 (query timeout/overload), other 5xx, 429 and connection errors or
timeouts are transient. 503 is never retried: Prometheus answers 503 to a query that
timed out, and running it again at once only adds load.

Messages show the URL without its userinfo, and every error leaving the querier has its
text (the server's or the transport's) scrubbed of the endpoint's secrets.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from guardian.adapters.http_credentials import CredentialError, secrets_of, shown_url
from guardian.adapters.query_transport import QueryTransport, Reply, TransportError
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, PromSample, QueryResult, RangeSeries
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

QueryObserver = Callable[[str, float], None]  # (outcome, seconds)
Answer = TypeVar("Answer", QueryResult, MatrixResult)


@dataclass(frozen=True)
class PrometheusAccess:
    """How to reach the query API: the shared client config plus what is Prometheus's own."""

    http: HttpClientConfig
    thanos: bool = False  # Thanos Query: no partial responses, dedup, warnings mean partial
    method: Literal["GET", "POST"] = "GET"
    trust_env: bool = True  # the environment's proxy, CA bundle and netrc apply


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


def _error_text(reply: Reply) -> tuple[str, str]:
    try:
        body = json.loads(reply.body)
        return str(body.get("errorType", "")), str(body.get("error", ""))
    except (ValueError, AttributeError):
        return "", reply.body[:500].decode("utf-8", "replace")


def _parse_value(pair: Any) -> float:
    return float(pair[1])


def _data(body: Any) -> tuple[Any, Any, tuple[str, ...]]:
    """(resultType, result, warnings) of a successful response body."""
    if not isinstance(body, dict) or body.get("status") != "success":
        raise QueryFailedError(
            f"unexpected response body: {str(body)[:300]}", reason="bad_response"
        )
    data = body.get("data") or {}
    warnings = tuple(str(w) for w in body.get("warnings") or ())
    return data.get("resultType"), data.get("result"), warnings


# Label sets of a rule's previous answer, keyed by their hash (a LabelSet's hash is that
# of its sorted pairs). Prometheus sends each series' labels sorted, so the hash of
# ``tuple(metric.items())`` finds the LabelSet it had before, checked equal: no sorting or
# new objects for the series that are still there, and the alert state keeps pointing at
# the same objects (dict lookups match by identity). Keys are ints, so the cache holds
# no second copy of the pairs. Small answers are kept apart: the one-series answers of a
# rule's `query` templates (one per alert, thousands a cycle) would otherwise push the
# rules' own out.
LabelCache = dict[int, LabelSet]
_CACHED_EXPRESSIONS = 256
_SMALL_ANSWER = 8  # series


def _interned(metric: dict[str, str], seen: LabelCache, fresh: LabelCache) -> LabelSet:
    labels = seen.get(hash(tuple(metric.items())))
    if labels is None or labels != metric:
        labels = LabelSet(metric)
    fresh[hash(labels)] = labels
    return labels


def _parse(
    body: Any, thanos: bool, seen: LabelCache | None = None
) -> tuple[QueryResult, LabelCache]:
    """The answer, and the label cache for the next answer to the same expression."""
    kind, result, warnings = _data(body)
    fresh: LabelCache = {}
    if kind == "vector":
        old = seen or {}
        samples = tuple(
            PromSample(_interned(item.get("metric") or {}, old, fresh), float(item["value"][1]))
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
    return QueryResult(samples, warnings, partial=bool(warnings) and thanos), fresh


def _parse_matrix(body: Any, thanos: bool) -> MatrixResult:
    kind, result, warnings = _data(body)
    if kind != "matrix":
        raise QueryRejectedError(f"query result is a {kind}, not a matrix", reason="bad_query")
    series = tuple(
        RangeSeries(
            LabelSet(item.get("metric") or {}),
            # The API gives seconds with millisecond precision; samples are whole ms.
            tuple((round(float(t) * 1000), float(v)) for t, v in item.get("values") or ()),
        )
        for item in result or ()
    )
    return MatrixResult(series, warnings, partial=bool(warnings) and thanos)


class PrometheusQuerier:
    """Queries at a given evaluation timestamp. One instance per target."""

    def __init__(
        self,
        access: PrometheusAccess,
        *,
        observer: QueryObserver | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.access = access
        self._observer = observer
        self._monotonic = monotonic
        self._secrets = secrets_of(access.http)
        self.shown_url = shown_url(access.http)
        self._labels: dict[str, LabelCache] = {}
        self._small: dict[str, LabelCache] = {}
        self._labels_lock = threading.Lock()
        self._transport = QueryTransport(access.http, self._secrets, trust_env=access.trust_env)

    def close(self) -> None:
        self._transport.close()

    def params(self, expr: str, ts: float) -> dict[str, str]:
        return {"query": expr, "time": f"{ts:.3f}", **self._thanos_params()}

    def _thanos_params(self) -> dict[str, str]:
        if self.access.thanos:
            return {"partial_response": "false", "dedup": "true"}
        return {}

    def query(self, expr: str, ts: float) -> QueryResult:
        """``expr`` at ``ts`` (unix seconds). Raises QueryFailedError/QueryRejectedError."""
        params = self.params(expr, ts)
        return self._observed(lambda: self._decode(expr, self._request("query", params)))

    def _decode(self, expr: str, body: Any) -> QueryResult:
        with self._labels_lock:
            seen = self._labels.pop(expr, None) or self._small.pop(expr, None)
        result, fresh = _parse(body, self.access.thanos, seen)
        if fresh:
            cache = self._small if len(fresh) < _SMALL_ANSWER else self._labels
            with self._labels_lock:
                cache[expr] = fresh  # newest last; the oldest expression goes first
                while len(cache) > _CACHED_EXPRESSIONS:
                    del cache[next(iter(cache))]
        return result

    def query_matrix(self, expr: str, ts: float) -> MatrixResult:
        """A range selector (``metric[1h]``) at ``ts``: every series' raw samples in the
        range. Staleness markers are not in the answer (PromQL drops them)."""
        params = self.params(expr, ts)
        return self._observed(
            lambda: _parse_matrix(self._request("query", params), self.access.thanos)
        )

    def query_range(self, expr: str, start: float, end: float, step: float) -> MatrixResult:
        """``expr`` at ``start``, ``start + step``, ... up to ``end`` (``/api/v1/query_range``)."""
        params = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:.3f}",
            **self._thanos_params(),
        }
        return self._observed(
            lambda: _parse_matrix(self._request("query_range", params), self.access.thanos)
        )

    def _observed(self, call: Callable[[], Answer]) -> Answer:
        started = self._monotonic()
        outcome = "error"
        try:
            result = call()
            outcome = "warnings" if result.warnings else "success"
            return result
        except (QueryFailedError, QueryRejectedError) as exc:
            outcome = exc.reason
            exc.args = (self._secrets.scrub(str(exc)),)  # a server may echo a credential
            raise
        finally:
            if self._observer is not None:
                self._observer(outcome, self._monotonic() - started)

    def _request(self, endpoint: str, params: dict[str, str], method: str = "") -> Any:
        """The JSON body of a 200 answer from ``/api/v1/<endpoint>``; errors as classes."""
        method = method or self.access.method
        try:
            reply = self._transport.request(method, f"api/v1/{endpoint}", params)
        except CredentialError as exc:
            raise QueryRejectedError(str(exc), reason="auth") from exc
        except TransportError as exc:
            detail = self._secrets.scrub(str(exc))
            if exc.timeout:
                raise QueryFailedError(
                    f"query to {self.shown_url} timed out after {self.access.http.timeout}s: "
                    f"{detail}",
                    reason="timeout",
                ) from None
            raise QueryFailedError(
                f"cannot reach {self.shown_url}: {detail}", reason="connection"
            ) from None
        status = reply.status
        if status == 200:
            try:
                return json.loads(reply.body)
            except ValueError as exc:
                raise QueryFailedError("response is not JSON", reason="bad_response") from exc
        error_type, error = _error_text(reply)
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
        retry_after = reply.retry_after
        delay = float(retry_after) if retry_after and retry_after.isdigit() else None
        if status == 429 or status >= 500:
            raise QueryFailedError(message, reason="unavailable", delay=delay)
        raise QueryRejectedError(message, reason="http_error")

    def metric_names(self) -> set[str]:
        """Every metric name the target knows (for ``rules check``). Raises
        QueryFailedError/QueryRejectedError, with the server's or the transport's text
        scrubbed."""
        return set(self.label_values("__name__"))

    def label_values(
        self, label: str, start: float | None = None, end: float | None = None
    ) -> list[str]:
        """The values of ``label`` (``/api/v1/label/<label>/values``), of series in
        ``[start, end]`` when given. Raises as :meth:`metric_names`."""
        params = (
            {} if start is None or end is None else {"start": f"{start:.3f}", "end": f"{end:.3f}"}
        )
        try:
            body = self._request(f"label/{quote(label, safe='')}/values", params, "GET")
        except (QueryFailedError, QueryRejectedError) as exc:
            exc.args = (self._secrets.scrub(str(exc)),)
            raise
        values = body.get("data") if isinstance(body, dict) else None
        if not isinstance(values, list):
            raise QueryFailedError(
                f"unexpected response body: {str(body)[:300]}", reason="bad_response"
            )
        return [str(v) for v in values]
