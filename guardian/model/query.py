"""What a query returned: samples (instant) or series (matrix), plus the server's warnings."""

from __future__ import annotations

from dataclasses import dataclass

from guardian.model.labels import LabelSet


@dataclass(frozen=True, slots=True)
class PromSample:
    labels: LabelSet
    value: float


@dataclass(frozen=True, slots=True)
class QueryResult:
    """An instant-vector answer. ``warnings`` come from the response body (the client
    library drops them); ``partial`` is set when a warning says stores were missing."""

    samples: tuple[PromSample, ...]
    warnings: tuple[str, ...] = ()
    partial: bool = False


@dataclass(frozen=True, slots=True)
class RangeSeries:
    """One series of a matrix answer: its labels and its samples ``(ms, value)``, oldest
    first (raw samples for a range selector, one per step for ``query_range``)."""

    labels: LabelSet
    samples: tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class MatrixResult:
    """A range-vector answer, with warnings and partiality as :class:`QueryResult`."""

    series: tuple[RangeSeries, ...]
    warnings: tuple[str, ...] = ()
    partial: bool = False
