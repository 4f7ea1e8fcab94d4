"""The exporter's idle facts (docs/exporter.md, "Idle facts"), derived from the raw series a
fleet already emits for a device, so that both forms of the guardian pack see the same
device states (the consistency rules of issue #33):

- ``observed_since``: the time of the device's first reading (the fleet's start);
- ``last_active``: the newest step whose activity (the utilization gauge or the busy
  counter's rate, whichever is higher) is above the 0.05 floor; absent before any;
- ``utilization_peak{window=W}`` and ``memory_used_peak{window="1h"}``: the highest value
  over the trailing window, present once the whole window was observed;
- ``last_process``: the newest step with a process on the device (a pod's, a host
  process, or on a MIG slice 64 MiB or more of memory);
- per pod and device: ``last_process`` and ``idle_since`` (the newest step with SM use,
  else the device's ``observed_since``).

Activity and memory are given as *spans*: ``(start, end, peak)`` over steps ``[start,
end)``; a span above the floor is active at every step (the fleet's busy patterns never dip
under it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fleet_core import CONST, COUNTER, Segment, Timeline
from fleet_shapes import const, frozen_at, timestamps

from guardian_common.durations import format_duration

FLOOR = 0.05
Span = tuple[int, int, float]


def spans(segments: Iterable[Segment], step: int = 0) -> list[Span]:
    """The peak of each segment: a constant's value, a pattern's highest value, or (with
    ``step``) a counter's rate per second."""
    out: list[Span] = []
    for seg in segments:
        if seg.kind == CONST:
            out.append((seg.start, seg.end, float(seg.value)))
        elif seg.kind == COUNTER:
            if step:
                out.append((seg.start, seg.end, seg.per_step / step))
        else:
            out.append((seg.start, seg.end, max(float(v) for v in seg.pattern)))
    return out


def rolling_max(values: Sequence[Span], window: int, first: int, end: int) -> list[Segment]:
    """Constant segments of the highest value over the trailing ``window`` steps (steps
    ``i - window + 1 .. i``), from step ``first + window`` (the whole window observed
    since ``first``) to ``end``. A span ``[a, b)`` counts at steps ``[a, b + window - 1)``."""
    reach = [(a, b + window - 1, v) for a, b, v in values if b > a]
    start = first + window
    cuts = sorted({start, end, *(p for a, b, _ in reach for p in (a, b) if start < p < end)})
    out: list[Segment] = []
    for lo, hi in itertools.pairwise(cuts):
        live = [v for a, b, v in reach if a <= lo < b]
        if not live:
            continue
        text = _num(max(live))
        if out and out[-1].value == text and out[-1].end == lo:
            out[-1] = Segment(out[-1].start, hi, CONST, text)
        else:
            out.append(Segment(lo, hi, CONST, text))
    return out


def _num(x: float) -> str:
    return repr(int(x)) if x == int(x) and abs(x) >= 1 else repr(round(x, 6))


def last_seen(
    t: Timeline,
    clock: int,
    steps: Sequence[tuple[int, int]],
    end: int,
    lag: float,
    hold: int | None = None,
) -> list[Segment]:
    """A timestamp fact: the scrape time (minus ``lag``) at every step of ``steps`` (ranges
    ``[a, b)``), and the last one's time held after each range until the next (at most
    ``hold`` steps, if given)."""
    out: list[Segment] = []
    merged: list[tuple[int, int]] = []
    for a, b in sorted(steps):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    for k, (a, b) in enumerate(merged):
        out += timestamps(t, clock, a, b, lag=lag)
        until = merged[k + 1][0] if k + 1 < len(merged) else end
        if hold is not None:
            until = min(until, b + hold)
        held = float(frozen_at(t, clock, b - 1)) - lag
        out += const(_num(held), b, until)
    return out


def active_steps(values: Sequence[Span]) -> list[tuple[int, int]]:
    return [(a, b) for a, b, v in values if v > FLOOR]


def observed_since(t: Timeline, clock: int, first: int, end: int) -> list[Segment]:
    return const(frozen_at(t, clock, first), first, end)


class FactWriter:
    """Emits a device's and a pod's facts through ``add(name, labels, node, segments)``
    (the fleet's own, so the node's faults apply to them too)."""

    def __init__(self, t: Timeline, idle_window_s: int, add: Callable[..., object]) -> None:
        self.t = t
        self.idle_window_s = idle_window_s
        self.add = add

    def _put(self, name: str, labels: dict[str, str], node: Any, segs: list[Segment]) -> None:
        if segs:
            self.add(name, labels, node, segs)

    def device(
        self,
        node: Any,
        labels: dict[str, str],
        activity: list[Span] | None,
        memory: list[Span],
        processes: list[tuple[int, int]],
    ) -> None:
        """``activity`` None: a MIG device (no utilization, so no last_active or peak)."""
        t, end, clock = self.t, self.t.steps, node.clock
        self._put(
            "guardian_gpu_observed_since_timestamp_seconds",
            labels,
            node,
            observed_since(t, clock, 0, end),
        )
        if activity is not None:
            self._put(
                "guardian_gpu_last_active_timestamp_seconds",
                labels,
                node,
                last_seen(t, clock, active_steps(activity), end, lag=1.0),
            )
            self._put(
                "guardian_gpu_utilization_peak_ratio",
                labels | {"window": format_duration(self.idle_window_s)},
                node,
                rolling_max(activity, self.idle_window_s // t.step, 0, end),
            )
        self._put(
            "guardian_gpu_memory_used_peak_bytes",
            labels | {"window": "1h"},
            node,
            rolling_max(memory, 3600 // t.step, 0, end),
        )
        self._put(
            "guardian_gpu_last_process_timestamp_seconds",
            labels,
            node,
            last_seen(t, clock, processes, end, lag=2.0),
        )

    def pod(
        self,
        node: Any,
        labels: dict[str, str],
        processes: tuple[int, int],
        sm_active: list[tuple[int, int]] | None,
    ) -> None:
        """One pod on one device: ``labels`` without container and container_id;
        ``sm_active`` the steps its processes showed SM use (None: a MIG device)."""
        t, end, clock = self.t, self.t.steps, node.clock
        hold = self.idle_window_s // t.step
        seen = last_seen(t, clock, [processes], end, lag=2.0, hold=hold)
        self._put("guardian_pod_device_last_process_timestamp_seconds", labels, node, seen)
        if sm_active is None or not seen:
            return
        lo, hi = seen[0].start, seen[-1].end
        idle = observed_since(t, clock, 0, end)[0].value
        segs: list[Segment] = []
        cursor = lo
        for a, b in sorted(sm_active):
            a, b = max(a, lo), min(b, hi)
            if b <= a:
                continue
            segs += const(idle, cursor, a) if not segs else []
            segs += last_seen(t, clock, [(a, b)], hi, lag=1.0)
            cursor = hi
        if not segs:
            segs = const(idle, lo, hi)
        self._put("guardian_pod_device_idle_since_timestamp_seconds", labels, node, segs)


def restart_facts(
    t: Timeline, clock: int, series: Iterable[Any], gap_start: int, gap_end: int
) -> None:
    """A gap of more than 3 intervals (already punched into ``series``): the device's
    observation starts again at the next reading, so observed_since (and an idle pod's
    idle_since, which is it) moves there, and the peaks are absent for a window."""
    before = frozen_at(t, clock, 0)
    after = frozen_at(t, clock, gap_end)
    for s in series:
        if s.name.endswith(("_peak_ratio", "_peak_bytes")):
            s.segments = [g for g in s.segments if g.end <= gap_start]
        elif s.name in (
            "guardian_gpu_observed_since_timestamp_seconds",
            "guardian_pod_device_idle_since_timestamp_seconds",
        ):
            s.segments = [
                Segment(g.start, g.end, CONST, after)
                if g.kind == CONST and g.value == before and g.start >= gap_end
                else g
                for g in s.segments
            ]
