"""What a range query returned: one series per label set, each with its points."""

from __future__ import annotations

from dataclasses import dataclass

from guardian.model.labels import LabelSet


@dataclass(frozen=True, slots=True)
class RangeSeries:
    """One series of a matrix: its labels and ``(timestamp ms, value)`` in time order."""

    labels: LabelSet
    points: tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class RangeResult:
    """A range-query answer. ``warnings`` and ``partial`` mean what they mean for an
    instant query (:class:`guardian.model.query.QueryResult`), for every step it covers."""

    series: tuple[RangeSeries, ...]
    warnings: tuple[str, ...] = ()
    partial: bool = False


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Evaluation steps ``start, start + step, ... <= end`` (unix seconds, ms precision)."""

    start: float
    end: float
    step: float

    def __post_init__(self) -> None:
        if self.step <= 0:
            raise ValueError(f"step must be > 0, got {self.step}")
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")

    @property
    def steps(self) -> int:
        return int(round(self.end * 1000) - round(self.start * 1000)) // self.step_ms + 1

    @property
    def step_ms(self) -> int:
        return round(self.step * 1000)

    def timestamps_ms(self) -> list[int]:
        first = round(self.start * 1000)
        return [first + i * self.step_ms for i in range(self.steps)]
