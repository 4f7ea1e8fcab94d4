"""What the ladder replay records, and what it reads besides the alert timeline.

- :class:`WouldStep`: a step the controller would have taken (a right-size names the
  idle pods it removes);
- :class:`Hold`: a cycle in which a guard kept a workload's ladder (or, with no workload,
  every action in a cluster) from moving;
- :class:`ReplayLog`: all of them, the cycles, the restores and the partly idle runs;
- :class:`ReplaySources`: each rule's lookback (what its alerts' evidence covers) and a
  :class:`PodSource`, the workloads' pods over time, read for the workloads whose reclaim
  the planner judged (:func:`judged_workloads`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from guardian.engine.simulate.partly_idle import PartlyIdleRun
from guardian.model.labels import LabelSet
from guardian.model.reclaim import MemberPod, Plan
from guardian.model.remediation_events import HoldKind, LadderStep, WorkloadRef

# A workload with the name of its cluster ("" where the source serves one).
InCluster = tuple[WorkloadRef, str]


@dataclass(frozen=True)
class WouldStep:
    """A ladder step the controller would have taken."""

    at: float
    workload: WorkloadRef
    step: LadderStep
    policy: str
    episode: str
    reason: str
    alert_labels: LabelSet
    removed: tuple[str, ...] = ()  # a right-size's idle pods (empty: the whole workload)


@dataclass(frozen=True)
class Hold:
    """A cycle in which a guard kept a workload's ladder from moving; with no workload,
    one in which pipeline health held every action in ``cluster``."""

    at: float
    workload: WorkloadRef | None
    reason: str
    policy: str = ""
    cluster: str = ""


@dataclass
class ReplayLog:
    steps: list[WouldStep] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    cycles: list[float] = field(default_factory=list)
    restores: list[tuple[float, WorkloadRef]] = field(default_factory=list)
    partly: list[PartlyIdleRun] = field(default_factory=list)


class PodSource(Protocol):
    """The workloads' pods over time, read from history as the replay asks for them."""

    def load(self, roots: Sequence[InCluster], ahead: Sequence[InCluster], now: float) -> None:
        """Read ``roots`` (with their cluster) from ``now`` on, and ``ahead`` (the cycle's
        other candidates) with them if it likes."""

    def members(self, ref: WorkloadRef, now: float) -> tuple[MemberPod, ...] | None:
        """``ref``'s pods at ``now``; None when history holds none of its pods at all."""


@dataclass(frozen=True)
class ReplaySources:
    """What the replay reads besides the timeline: each rule's lookback (group, rule ->
    seconds), which the alerts carry as their ``window``, and the workloads' pods over
    time (None: the snapshot's members, all along)."""

    windows: Mapping[tuple[str, str], float] = field(default_factory=dict)
    pods: PodSource | None = None


# Waits a workload gets before the planner judges its reclaim: its pods are not read for them.
_BEFORE_RECLAIM = (
    HoldKind.GRACE,
    HoldKind.WINDOW,
    HoldKind.STEP,
    HoldKind.OUTAGE,
    HoldKind.RESUMING,
)


def judged_workloads(result: Plan) -> set[WorkloadRef]:
    """The workloads whose reclaim the planner judged (or refused) in ``result``: the
    replay reads their pods from history."""
    found = {
        a.workload for a in result.actions if a.step in (LadderStep.RECLAIM, LadderStep.CHECKPOINT)
    }
    found.update(
        w.workload
        for w in result.waits
        if w.workload is not None
        and w.kind not in _BEFORE_RECLAIM
        and (w.refused or w.kind is not HoldKind.GUARD)
    )
    return found
