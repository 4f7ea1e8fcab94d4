"""Value shapes over a timeline, shared by the guardian and dcgm fleets.

Each function returns the segments of one series; ``None`` bounds mean the whole
timeline. Counters stay continuous across segments of different rates.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet_core import CONST, COUNTER, PATTERN, Segment, Series, Timeline

BUSY = ("0.62", "0.71", "0.55", "0.8", "0.67", "0.59", "0.74", "0.66")
IDLE = ("0", "0.01", "0.02", "0.01", "0", "0.01")
BUSY_PCT = ("62", "71", "55", "80", "67", "59", "74", "66")
IDLE_PCT = ("0", "1", "2", "1", "0", "1")


def const(value: str, start: int, end: int) -> list[Segment]:
    return [Segment(start, end, CONST, value)] if end > start else []


def pattern(values: Sequence[str], start: int, end: int) -> list[Segment]:
    return [Segment(start, end, PATTERN, pattern=tuple(values))] if end > start else []


def counter(rates: Sequence[tuple[int, int, float]], base: float = 0.0) -> list[Segment]:
    """``rates``: (start, end, increase per step), in order; the counter never drops."""
    out: list[Segment] = []
    value = base
    for start, end, per_step in rates:
        if end <= start:
            continue
        out.append(Segment(start, end, COUNTER, base=value, per_step=per_step))
        value += per_step * (end - start)
    return out


def timestamps(t: Timeline, clock: int, start: int, end: int, lag: float = 0.0) -> list[Segment]:
    """A gauge holding the time of its own scrape (minus ``lag``): last-success and
    last-active timestamps."""
    if end <= start:
        return []
    first = t.start + start * t.step + (clock % t.step) - lag
    return [Segment(start, end, COUNTER, base=first, per_step=float(t.step))]


def frozen_at(t: Timeline, clock: int, step: int) -> str:
    return str(t.start + step * t.step + (clock % t.step))


def clip(series: Series, end: int) -> None:
    """Drop every sample from step ``end`` on."""
    kept: list[Segment] = []
    for seg in series.segments:
        if seg.start >= end:
            continue
        kept.append(_cut(seg, seg.start, min(seg.end, end)))
    series.segments = kept


def punch(series: Series, start: int, end: int) -> None:
    """No samples in steps ``[start, end)`` (lost scrapes)."""
    kept: list[Segment] = []
    for seg in series.segments:
        if seg.end <= start or seg.start >= end:
            kept.append(seg)
            continue
        if seg.start < start:
            kept.append(_cut(seg, seg.start, start))
        if seg.end > end:
            kept.append(_cut(seg, end, seg.end))
    series.segments = kept


def _cut(seg: Segment, start: int, end: int) -> Segment:
    if seg.kind == COUNTER:
        return Segment(
            start,
            end,
            COUNTER,
            base=seg.base + seg.per_step * (start - seg.start),
            per_step=seg.per_step,
        )
    return Segment(start, end, seg.kind, seg.value, seg.pattern)
