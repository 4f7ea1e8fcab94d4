"""Series as time segments, written as OpenMetrics text in time chunks for promtool.

A fleet is a list of :class:`Series`: a metric name, its label text and segments over the
scrape steps. Each segment covers steps ``[start, end)`` and is a constant, a cycled
pattern or a counter; steps outside every segment have no sample (a gap, a series that
starts late or vanishes). Every node scrapes at its own offset within the interval.

:func:`write_chunk` writes the samples of steps ``[lo, hi)`` of every series, families
together and each series in time order, as ``promtool tsdb create-blocks-from
openmetrics`` wants. Constant segments (most samples) are written with one ``str.join``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

CONST, PATTERN, COUNTER = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Segment:
    """Steps ``[start, end)``. CONST: ``value`` is the text. PATTERN: ``pattern[i % len]``.
    COUNTER: ``base + per_step * (i - start)``."""

    start: int
    end: int
    kind: int = CONST
    value: str = "1"
    pattern: tuple[str, ...] = ()
    base: float = 0.0
    per_step: float = 0.0


@dataclass(slots=True)
class Series:
    name: str
    labels: str  # `k="v",...` already escaped
    clock: int  # index of the node's timestamp list
    segments: list[Segment] = field(default_factory=list)


def label_text(labels: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if v != "")


def hex_id(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def gpu_uuid(seed: str) -> str:
    h = hex_id(seed, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass
class Timeline:
    """Scrape steps from ``start`` (unix seconds) every ``step`` seconds; ``anchor`` is
    the step at which the benchmark expects to evaluate (events are placed around it)."""

    start: int
    step: int
    steps: int
    anchor: int
    offsets: int = 15  # distinct per-node scrape offsets, in seconds

    def at(self, minutes_from_anchor: float) -> int:
        """The step ``minutes_from_anchor`` minutes after the anchor (negative: before)."""
        return max(0, min(self.steps, self.anchor + round(minutes_from_anchor * 60 / self.step)))

    def clocks(self) -> list[list[str]]:
        width = min(self.offsets, self.step)
        return [
            [str(self.start + i * self.step + o) for i in range(self.steps)] for o in range(width)
        ]

    def clock_of(self, node_index: int) -> int:
        return (node_index * 7) % min(self.offsets, self.step)


def _counter_text(x: float) -> str:
    return repr(round(x, 3))


def _segment_lines(head: str, seg: Segment, lo: int, hi: int, clock: Sequence[str]) -> str:
    s, e = max(seg.start, lo), min(seg.end, hi)
    if s >= e:
        return ""
    if seg.kind == CONST:
        prefix = f"{head} {seg.value} "
        return prefix + ("\n" + prefix).join(clock[s:e]) + "\n"
    if seg.kind == PATTERN:
        p, n = seg.pattern, len(seg.pattern)
        return "".join([f"{head} {p[i % n]} {clock[i]}\n" for i in range(s, e)])
    b, k, s0 = seg.base, seg.per_step, seg.start
    return "".join([f"{head} {_counter_text(b + k * (i - s0))} {clock[i]}\n" for i in range(s, e)])


def write_chunk(
    out: IO[str],
    families: Iterable[Sequence[Series]],
    clocks: Sequence[Sequence[str]],
    lo: int,
    hi: int,
) -> int:
    """Write steps ``[lo, hi)`` of every series; returns the number of bytes written."""
    written = 0
    for family in families:
        for series in family:
            head = f"{series.name}{{{series.labels}}}" if series.labels else series.name
            clock = clocks[series.clock]
            parts = [_segment_lines(head, seg, lo, hi, clock) for seg in series.segments]
            text = "".join(parts)
            if text:
                out.write(text)
                written += len(text)
    out.write("# EOF\n")
    return written


@dataclass
class Fleet:
    """Series grouped by family (promtool wants each family's samples together)."""

    families: dict[str, list[Series]] = field(default_factory=dict)

    def add(self, series: Series) -> None:
        self.families.setdefault(series.name, []).append(series)

    def series_count(self) -> int:
        return sum(len(f) for f in self.families.values())

    def sample_count(self) -> int:
        return sum(
            max(0, seg.end - seg.start)
            for family in self.families.values()
            for series in family
            for seg in series.segments
        )

    def ordered(self) -> list[list[Series]]:
        return [self.families[name] for name in sorted(self.families)]
