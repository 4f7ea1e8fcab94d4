"""What the replay's reclaims would have freed, and which ones the workloads regretted.

Pure arithmetic over a reclaimed workload's own usage after the reclaim, as Prometheus
recorded it: GPUs held (per model) and whether any of them was busy, at every step.

- **Restore time**: the first step at or after the reclaim at which the workload was
  busy. Its owner would have wanted it back then (the replay restores it there).
- **Freed GPU-hours**: the GPUs the workload held from the reclaim to its restore time
  (or the end of the range), step by step, so a workload that ended frees nothing after.
- **Regret**: the workload was busy within ``horizon`` after the reclaim, so the reclaim
  was (probably) a false positive.

A right-size (``partial: rightSize``) removes the idle pods only: all three are counted on
those pods, the others going on as they did.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from guardian.engine.notify.findings import PriceTable
from guardian.engine.simulate.pod_tracks import GpuTrack, members_at
from guardian.engine.simulate.replay_records import Hold, WouldStep
from guardian.model.reclaim import MemberPod
from guardian.model.remediation_events import WorkloadRef


@dataclass(frozen=True)
class WorkloadUsage:
    """What the workload held and when it was busy, each point standing for ``step``;
    with the GPUs each of its pods held (``gpus``, read from ``since`` on), also its pods
    over time."""

    workload: WorkloadRef
    step: float  # seconds each point stands for
    held: Mapping[str, Sequence[tuple[int, float]]] = field(default_factory=dict)
    # GPU model ("" unknown) -> (timestamp ms, GPUs held), in any order
    busy: Sequence[int] = ()  # sorted timestamps (ms) at which any of its GPUs was busy
    gpus: tuple[GpuTrack, ...] = ()
    since: float = 0.0  # the first point read

    def first_busy(self, after: float, pods: Sequence[str] = ()) -> float | None:
        """The first busy step at or after ``after``, of ``pods`` only if given."""
        at = round(after * 1000)
        if pods:
            found = [b for t in self.gpus if t.pod in pods if (b := t.first_busy(at)) is not None]
            return min(found) / 1000 if found else None
        i = bisect.bisect_left(self.busy, at)
        return self.busy[i] / 1000 if i < len(self.busy) else None

    def members(self, now: float) -> tuple[MemberPod, ...] | None:
        """Its pods at ``now``; None when no pod of it held a GPU in what was read."""
        if not self.gpus:
            return None
        return members_at(self.gpus, now, self.step, self.since)


def usage_of(
    ref: WorkloadRef, step: float, gpus: Sequence[GpuTrack], since: float
) -> WorkloadUsage:
    """The usage of a workload whose pods held ``gpus``."""
    held: dict[str, list[tuple[int, float]]] = {}
    busy: set[int] = set()
    for track in gpus:
        held.setdefault(track.model, []).extend((ts, 1.0) for ts in track.held)
        busy.update(track.busy)
    return WorkloadUsage(ref, step, held, tuple(sorted(busy)), tuple(gpus), since)


@dataclass(frozen=True)
class Freed:
    gpu_hours: float
    cost: float | None  # None when some model has no price
    by_model: Mapping[str, float] = field(default_factory=dict)


def freed(usage: WorkloadUsage, start: float, end: float, prices: PriceTable) -> Freed:
    """GPU-hours (and their cost) the workload held in ``[start, end)``."""
    lo, hi = round(start * 1000), round(end * 1000)
    hours = usage.step / 3600.0
    by_model = {
        model: sum(g for ts, g in points if lo <= ts < hi) * hours
        for model, points in usage.held.items()
    }
    return _freed(by_model, prices)


def freed_on(
    usage: WorkloadUsage, gpus: Sequence[GpuTrack], span: tuple[float, float], prices: PriceTable
) -> Freed:
    """GPU-hours (and their cost) of ``gpus`` (some of the workload's) held in ``span``."""
    lo, hi = round(span[0] * 1000), round(span[1] * 1000)
    hours = usage.step / 3600.0
    by_model: dict[str, float] = {}
    for track in gpus:
        by_model[track.model] = by_model.get(track.model, 0.0) + track.held_in(lo, hi) * hours
    return _freed(by_model, prices)


def _freed(by_model: Mapping[str, float], prices: PriceTable) -> Freed:
    kept = {model: h for model, h in by_model.items() if h}
    return Freed(sum(kept.values()), _cost(kept, prices), kept)


def _cost(gpu_hours: Mapping[str, float], prices: PriceTable) -> float | None:
    total = 0.0
    for model, hours in gpu_hours.items():
        price = prices.price(model or None)
        if price is None:
            if hours > 0:
                return None
            continue
        total += price * hours
    return total


@dataclass(frozen=True)
class ReclaimOutcome:
    step: WouldStep
    restored_at: float | None  # when its owner would have wanted it back (first busy)
    regret: bool
    freed: Freed


def reclaim_outcome(
    step: WouldStep, usage: WorkloadUsage, until: float, horizon: float, prices: PriceTable
) -> ReclaimOutcome:
    busy = usage.first_busy(step.at, step.removed)
    end = busy if busy is not None else until
    regret = busy is not None and busy - step.at <= horizon
    if step.removed:
        removed = [t for t in usage.gpus if t.pod in step.removed]
        return ReclaimOutcome(step, busy, regret, freed_on(usage, removed, (step.at, end), prices))
    return ReclaimOutcome(step, busy, regret, freed(usage, step.at, end, prices))


@dataclass(frozen=True)
class HoldSpan:
    """Consecutive cycles with the same hold."""

    start: float
    end: float
    workload: WorkloadRef | None
    cluster: str
    reason: str
    cycles: int


def hold_spans(holds: Iterable[Hold], cycles: Sequence[float], prefix: str) -> list[HoldSpan]:
    """Holds whose reason starts with ``prefix``, merged over consecutive cycles."""
    index = {at: i for i, at in enumerate(cycles)}
    open_spans: dict[tuple[WorkloadRef | None, str, str], tuple[int, HoldSpan]] = {}
    done: list[HoldSpan] = []
    for hold in sorted(holds, key=lambda h: h.at):
        if not hold.reason.startswith(prefix):
            continue
        key = (hold.workload, hold.cluster, hold.reason)
        i = index.get(hold.at, -2)
        current = open_spans.get(key)
        if current is not None and current[0] == i - 1:
            span = current[1]
            open_spans[key] = (i, HoldSpan(span.start, hold.at, *key, span.cycles + 1))
            continue
        if current is not None:
            done.append(current[1])
        open_spans[key] = (i, HoldSpan(hold.at, hold.at, *key, 1))
    done.extend(span for _, span in open_spans.values())
    return sorted(done, key=lambda s: (s.start, str(s.workload), s.reason))
