"""A partly idle workload as the replay saw it, over consecutive cycles.

The planner holds a reclaim when its evidence covers only part of the workload, and says
so in a wait (``partly_idle``) whose reason names the idle and the other parts. At the
first cycle of a run of such cycles the replay keeps that reason and judges the same
evidence again (the same alerts, the same governing policy, the same members) to pin the
idle part down: whole pods (all their GPUs) and, in a pod with j of its m GPUs idle,
those j GPUs; the next consecutive cycles only extend the run. What a right-size would
have freed is counted on that part (partial_outcomes.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from guardian.engine.remediation.delegation import Governing, governing
from guardian.engine.remediation.evidence import coverage
from guardian.engine.simulate.pod_tracks import device_of
from guardian.model.policies import ReclaimPolicy
from guardian.model.reclaim import FiringAlert, NamespaceState, Wait, WorkloadState
from guardian.model.remediation_events import WorkloadRef


@dataclass(frozen=True)
class IdlePart:
    """One pod's idle part: its idle GPUs (None: every GPU it holds)."""

    pod: str
    devices: frozenset[str] | None = None


@dataclass(frozen=True)
class PodPart:
    """One pod as the evidence judged it."""

    pod: str
    idle: bool
    why: str


@dataclass(frozen=True)
class PartlyIdleRun:
    """Consecutive cycles in which the planner held a workload as partly idle; the reason
    and the parts are those of the first."""

    at: float  # the first cycle
    workload: WorkloadRef
    policy: str
    cluster: str
    reason: str  # the planner's: names the idle and the other parts
    pods: tuple[PodPart, ...] = ()
    idle: tuple[IdlePart, ...] = ()
    last: float = 0.0  # the last cycle (``at`` until extended)
    cycles: int = 1

    @property
    def idle_pods(self) -> int:
        return sum(1 for p in self.pods if p.idle)

    def extended(self, now: float) -> PartlyIdleRun:
        return replace(self, last=now, cycles=self.cycles + 1)


@dataclass(frozen=True)
class Judged:
    """What the replay judges a partly idle wait on: the workload as the planner had it,
    its firing alerts, the policies and its namespace."""

    ws: WorkloadState
    alerts: Sequence[FiringAlert]
    policies: Sequence[ReclaimPolicy]
    namespace: NamespaceState | None


def partly_idle_run(wait: Wait, judged: Judged, now: float) -> PartlyIdleRun:
    """The run ``wait`` (a partly idle one) starts at ``now``, its parts judged again."""
    chosen = governing(judged.policies, judged.alerts, judged.ws, judged.namespace)
    matched = chosen.alerts if isinstance(chosen, Governing) else judged.alerts
    covered = coverage(judged.ws, matched, now)
    parts = tuple(PodPart(v.pod, v.idle, v.why) for v in covered.pods)
    idle = []
    for verdict in covered.pods:
        if verdict.idle:
            idle.append(IdlePart(verdict.pod))
        elif verdict.some_idle:
            devices = {
                device_of(a.labels)
                for a in matched
                if a.firing and a.labels.get("pod") == verdict.pod
            }
            idle.append(IdlePart(verdict.pod, frozenset(devices)))
    ref = wait.workload or judged.ws.ref
    cluster = wait.alert_labels.get("cluster", "")
    return PartlyIdleRun(now, ref, wait.policy, cluster, wait.reason, parts, tuple(idle), now)
