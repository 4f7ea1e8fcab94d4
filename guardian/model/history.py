"""A range of evaluation steps (what a range query asks for; its answer is
:class:`guardian.model.query.MatrixResult`)."""

from __future__ import annotations

from dataclasses import dataclass


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
