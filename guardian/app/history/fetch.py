"""Range queries over long stretches of history, within the server's limits.

A range is cut into chunks (``chunk_seconds`` long, and never more than
``max_points`` steps, Prometheus's 11,000 points per series), fetched one at a time.
A chunk the server refuses for its size (too many samples for ``--query.max-samples``,
more points than it returns, or its query timeout) is split in two and each half
fetched again, down to a single step; what still fails is raised as
:class:`ChunkFailedError`, which names the chunk, its time range and the query.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from guardian.adapters.prometheus import QueryFailedError, QueryRejectedError
from guardian.model.history import TimeRange
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, RangeSeries
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

MAX_POINTS = 11_000  # Prometheus refuses range queries returning more points per series


class RangeSource(Protocol):
    def query_range(self, expr: str, start: float, end: float, step: float) -> MatrixResult: ...


_TOO_BIG = ("too many samples", "exceeded maximum resolution", "query timed out", "timeout")


class ChunkFailedError(GuardianError):
    """A chunk of history could not be read; the message says which and why."""


@dataclass(frozen=True)
class Chunk:
    """Steps ``start, start + step, ...`` up to ``end`` inclusive (the last step)."""

    index: int
    total: int
    span: TimeRange

    def describe(self) -> str:
        """``chunk 2/7 (A to B)``; a chunk of one step names its one time: ``(at A)``."""
        start, end = rfc3339(self.span.start), rfc3339(self.span.end)
        return f"chunk {self.index}/{self.total} " + (
            f"(at {start})" if start == end else f"({start} to {end})"
        )


def plan_chunks(span: TimeRange, chunk_seconds: float, max_points: int = MAX_POINTS) -> list[Chunk]:
    """``span`` cut into consecutive chunks of whole steps."""
    per_chunk = max(1, min(max_points, int(chunk_seconds // span.step)))
    first = round(span.start * 1000)
    steps, step_ms = span.steps, span.step_ms
    starts = list(range(0, steps, per_chunk))
    chunks = []
    for n, i in enumerate(starts, start=1):
        last = min(i + per_chunk, steps) - 1
        chunks.append(
            Chunk(
                n,
                len(starts),
                TimeRange((first + i * step_ms) / 1000, (first + last * step_ms) / 1000, span.step),
            )
        )
    return chunks


def _too_big(exc: Exception) -> bool:
    if isinstance(exc, QueryFailedError) and exc.reason == "timeout":
        return True
    text = str(exc).lower()
    return isinstance(exc, (QueryRejectedError, QueryFailedError)) and any(
        marker in text for marker in _TOO_BIG
    )


def _merge(first: MatrixResult, second: MatrixResult) -> MatrixResult:
    points: dict[LabelSet, list[tuple[int, float]]] = {}
    for part in (first, second):
        for series in part.series:
            points.setdefault(series.labels, []).extend(series.samples)
    return MatrixResult(
        tuple(RangeSeries(labels, tuple(p)) for labels, p in points.items()),
        first.warnings + second.warnings,
        first.partial or second.partial,
    )


class RangeFetcher:
    """Fetches one expression over one span, halving it while the server says too big."""

    def __init__(self, source: RangeSource) -> None:
        self._source = source
        self.queries = 0
        self.splits = 0

    def fetch(self, expr: str, span: TimeRange) -> MatrixResult:
        self.queries += 1
        try:
            return self._source.query_range(expr, span.start, span.end, span.step_ms / 1000)
        except (QueryFailedError, QueryRejectedError) as exc:
            if span.steps < 2 or not _too_big(exc):
                raise
            self.splits += 1
            half = span.steps // 2
            middle = (round(span.start * 1000) + half * span.step_ms) / 1000
            logger.info(
                "splitting %s to %s in two (%s)", rfc3339(span.start), rfc3339(span.end), exc
            )
            left = TimeRange(span.start, middle - span.step, span.step)
            right = TimeRange(middle, span.end, span.step)
            return _merge(self.fetch(expr, left), self.fetch(expr, right))

    def fetch_chunk(self, expr: str, chunk: Chunk, what: str) -> MatrixResult:
        """``fetch`` that names the chunk (and ``what`` was asked) when it fails."""
        try:
            return self.fetch(expr, chunk.span)
        except (QueryFailedError, QueryRejectedError) as exc:
            raise ChunkFailedError(f"{chunk.describe()} failed for {what}: {exc}") from exc
