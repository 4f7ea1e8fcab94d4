"""Range queries (``/api/v1/query_range``), answered per evaluation step.

Used by ``guardian rules test`` to fetch, in one request, what a rule reading only the
test input gives at every step. Plain Prometheus only: no Thanos parameters, no
credentials beyond the session's. Any warning makes the answer unusable here, so it is
raised as an error and the caller falls back to instant queries.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import requests

from guardian.adapters.prometheus import QueryFailedError, QueryRejectedError
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult


class RangeQuerier:
    def __init__(self, url: str, *, session: requests.Session, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._session = session
        self._timeout = timeout

    def query_range(
        self, expr: str, start_ms: int, end_ms: int, step_ms: int
    ) -> dict[int, QueryResult]:
        """``expr`` at every step from ``start_ms`` to ``end_ms``: step (ms) -> answer.
        Steps without samples are absent. Raises QueryFailedError/QueryRejectedError."""
        params = {
            "query": expr,
            "start": f"{start_ms / 1000:.3f}",
            "end": f"{end_ms / 1000:.3f}",
            "step": f"{step_ms / 1000:.3f}",
        }
        try:
            response = self._session.get(
                f"{self.url}/api/v1/query_range", params=params, timeout=self._timeout
            )
        except requests.RequestException as exc:
            raise QueryFailedError(f"cannot reach {self.url}: {exc}", reason="connection") from exc
        try:
            body: Any = response.json()
        except ValueError as exc:
            raise QueryFailedError("response is not JSON", reason="bad_response") from exc
        if response.status_code != 200 or body.get("status") != "success":
            message = (
                f"HTTP {response.status_code} {body.get('errorType', '')}: {body.get('error')}"
            )
            raise QueryRejectedError(message, reason="execution")
        if body.get("warnings"):
            raise QueryFailedError(f"warnings: {body['warnings']}", reason="warnings")
        return _by_step(body.get("data") or {})


def _by_step(data: dict[str, Any]) -> dict[int, QueryResult]:
    if data.get("resultType") != "matrix":
        raise QueryRejectedError(
            f"range query result is a {data.get('resultType')}", reason="bad_query"
        )
    samples: dict[int, list[PromSample]] = defaultdict(list)
    for series in data.get("result") or ():
        labels = LabelSet(series.get("metric") or {})
        for timestamp, value in series.get("values") or ():
            samples[round(float(timestamp) * 1000)].append(PromSample(labels, float(value)))
    return {step: QueryResult(tuple(found)) for step, found in samples.items()}
