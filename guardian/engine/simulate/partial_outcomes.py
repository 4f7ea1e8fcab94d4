"""What the partly idle workloads of a replay would have given back to a right-size.

The replay logs the runs of consecutive cycles in which the planner held a workload's
reclaim because only part of it was idle; a run's idle part is that of its first cycle
(its idle pods, and in a pod with only some of its GPUs idle, those GPUs). A right-size
from the start of the run (removing the idle replicas, or asking for fewer GPUs) would
have freed the GPU-hours that part held from then until one of its GPUs was busy again,
the whole workload was reclaimed (once all of it was idle), a later run of it began, or
the range ended, whichever came first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from guardian.engine.notify.findings import PriceTable
from guardian.engine.simulate.partly_idle import PartlyIdleRun
from guardian.engine.simulate.reclaim_outcomes import Freed, WorkloadUsage, freed_on
from guardian.engine.simulate.replay_records import WouldStep
from guardian.model.remediation_events import LadderStep, WorkloadRef

NOTHING = Freed(0.0, 0.0)


@dataclass(frozen=True)
class PartlyIdle:
    """A run of cycles in which a workload was partly idle, and what a right-size from
    its first would have freed."""

    run: PartlyIdleRun
    busy_again: float | None = None  # the idle part, busy again before the right-size ended
    freed: Freed = NOTHING


def right_size(
    run: PartlyIdleRun, usage: WorkloadUsage | None, stop: float, prices: PriceTable
) -> PartlyIdle:
    """What a right-size of ``run``'s idle part, from its start to ``stop``, would have
    freed."""
    if usage is None:
        return PartlyIdle(run)
    parts = {p.pod: p.devices for p in run.idle}
    gpus = [
        t
        for t in usage.gpus
        if t.pod in parts and ((devices := parts[t.pod]) is None or t.device in devices)
    ]
    lo = round(run.at * 1000)
    busy = min((b for t in gpus if (b := t.first_busy(lo)) is not None), default=None)
    again = busy / 1000 if busy is not None and busy / 1000 < stop else None
    end = stop if again is None else again
    return PartlyIdle(run, again, freed_on(usage, gpus, (run.at, end), prices))


def right_sizes(
    runs: Sequence[PartlyIdleRun],
    usages: Mapping[WorkloadRef, WorkloadUsage],
    steps: Sequence[WouldStep],
    until: float,
    prices: PriceTable,
) -> list[PartlyIdle]:
    """Every run with its right-size, each ended by its workload's next run or reclaim."""
    out = []
    for run in sorted(runs, key=lambda r: (r.at, str(r.workload))):
        ref = run.workload
        later = [r.at for r in runs if r.workload == ref and r.at > run.at]
        later += [
            s.at
            for s in steps
            if s.workload == ref and s.step is LadderStep.RECLAIM and s.at >= run.at
        ]
        out.append(right_size(run, usages.get(ref), min([until, *later]), prices))
    return out
