"""Planner tables: active windows, demand-aware reclaim and the checkpoint handshake."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.policies import Annotations, ReclaimPolicy
from guardian.model.reclaim import (
    ClusterSnapshot,
    LedgerEntry,
    LedgerView,
    NodeState,
    PendingPod,
    Plan,
    PodOwner,
)
from guardian.model.remediation_events import LadderStep, StepOutcome
from guardian.model.times import rfc3339

from .factories import NOW, alert, enforce, healthy, ref, snapshot, workload

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
EPISODE = workload_episode(ref(), NOW - 7200)
NOTIFIED = NOW - 7000  # grace (1h) over


def view(*steps: tuple[LadderStep, float]) -> LedgerView:
    base = ((LadderStep.NOTIFY, NOTIFIED), (LadderStep.ANNOTATE, NOTIFIED + 60), *steps)
    entries = tuple(
        LedgerEntry(EPISODE, ref(), step, StepOutcome.APPLIED, at, "p", False) for step, at in base
    )
    return LedgerView({ref(): (EPISODE, NOW - 7200, "p")}, entries)


def gpu_snapshot(
    pending: tuple[PendingPod, ...] | None = (),
    *,
    annotations: dict[str, str] | None = None,
    gpus: int = 2,
) -> ClusterSnapshot:
    ws = dataclasses.replace(workload(annotations=annotations), pods=("web-1",))
    base = snapshot(ws)
    owner = PodOwner("ml", "web-1", ws.ref, node="n1", uid="u1", requests={"nvidia.com/gpu": gpus})
    # Demand counts only a pod shown to fit the node: n1 has room for any of these pods.
    node = NodeState("n1", allocatable={"nvidia.com/gpu": 8, "pods": 110})
    return dataclasses.replace(
        base, pod_owners={("ml", "web-1"): owner}, pending_pods=pending, nodes={"n1": node}
    )


def waiting(
    name: str = "trainer-0", ns: str = "research", gpus: int = 1, age: float = 900.0, **more: int
) -> PendingPod:
    return PendingPod(ns, name, {"nvidia.com/gpu": gpus, **more}, NOW - age)


@dataclass
class Case:
    id: str
    expect: str  # a LadderStep value, or "wait:<substring>"
    policy: ReclaimPolicy = field(default_factory=enforce)
    snap: ClusterSnapshot = field(default_factory=gpu_snapshot)
    ledger: LedgerView = field(default_factory=view)
    reason: str = ""  # a substring of the action's reason
    now: float = NOW


def demand(**reclaim: Any) -> ReclaimPolicy:
    return enforce(reclaim={"when": "demand", "pendingFor": "10m", **reclaim})


def handshake(**checkpoint: Any) -> ReclaimPolicy:
    return enforce(checkpoint={"enabled": True, "timeout": "15m", **checkpoint})


REQUESTED = NOW - 300
ASKED = view((LadderStep.CHECKPOINT, REQUESTED))
LATE = view((LadderStep.CHECKPOINT, NOW - 1200))  # 20m ago: past the 15m timeout

# NOW is Thursday 2023-11-16 02:00 UTC.
CASES = [
    # ---- windows
    Case("window open", "reclaim", enforce(activeWindows=["Thu 01:00-03:00 UTC"])),
    Case(
        "window closed holds the reclaim",
        "wait:outside the active windows (Mon-Fri 08:00-18:00 Europe/Berlin)",
        enforce(activeWindows=["Mon-Fri 08:00-18:00 Europe/Berlin"]),
    ),
    Case(
        "notify goes out outside windows by default",
        "notify",
        enforce(activeWindows=["Sat 10:00-12:00 UTC"]),
        ledger=LedgerView(),
    ),
    Case(
        "notify held outside windows when configured",
        "wait:the ladder waits until 2023-11-18T10:00:00Z",
        enforce(activeWindows=["Sat 10:00-12:00 UTC"], notifyOutsideWindows=False),
        ledger=LedgerView(),
    ),
    Case(
        "window in the zone's wall clock (03:00 CET)",
        "reclaim",
        enforce(activeWindows=["Thu 03:00-04:00 Europe/Berlin"]),
    ),
    # ---- demand
    Case("demand: nobody waits", "wait:no demand: no pod that could use its GPUs", demand()),
    Case("demand: pending pods unknown", "wait:not known yet", demand(), gpu_snapshot(None)),
    Case(
        "demand: a pod waits long enough",
        "reclaim",
        demand(),
        gpu_snapshot((waiting(),)),
        reason="waiting for its GPUs: research/trainer-0 (Pending since",
    ),
    Case(
        "demand: pending for less than pendingFor",
        "wait:no demand",
        demand(),
        gpu_snapshot((waiting(age=120),)),
    ),
    Case(
        "demand: asks more than the node frees",
        "wait:no demand",
        demand(),
        gpu_snapshot((waiting(gpus=4),)),
    ),
    Case(
        "demand: another extended resource",
        "wait:no demand",
        demand(),
        gpu_snapshot((PendingPod("x", "amd", {"amd.com/gpu": 1}, NOW - 900),)),
    ),
    Case(
        "demand: its own pod is not demand",
        "wait:no demand",
        demand(),
        gpu_snapshot((waiting("web-1", "ml"),)),
    ),
    Case(
        "demand: workload holds no GPUs",
        "wait:request no extended resource",
        demand(),
        gpu_snapshot((waiting(),), gpus=0),
    ),
    Case("always: no demand needed", "reclaim", enforce(), gpu_snapshot(())),
    # ---- checkpoint handshake
    Case("checkpoint: ask first", "checkpoint", handshake(), reason="checkpoint requested"),
    Case(
        "checkpoint: waiting for the ack",
        "wait:waiting for gpu-guardian.io/checkpointed-at",
        handshake(),
        ledger=ASKED,
    ),
    Case(
        "checkpoint: ack",
        "reclaim",
        handshake(),
        gpu_snapshot(annotations={Annotations.CHECKPOINTED_AT: rfc3339(NOW - 60)}),
        ASKED,
        reason="checkpointed at",
    ),
    Case(
        "checkpoint: an ack older than the request does not count",
        "wait:waiting for",
        handshake(),
        gpu_snapshot(annotations={Annotations.CHECKPOINTED_AT: rfc3339(REQUESTED - 60)}),
        ASKED,
    ),
    Case(
        "checkpoint: timeout reclaims",
        "reclaim",
        handshake(),
        ledger=LATE,
        reason="no checkpoint acknowledged by",
    ),
    Case(
        "checkpoint: timeout gives up",
        "wait:gave up (onTimeout: giveUp)",
        handshake(onTimeout="giveUp"),
        ledger=LATE,
    ),
    Case(
        "checkpoint: a late ack still reclaims after giving up",
        "reclaim",
        handshake(onTimeout="giveUp"),
        gpu_snapshot(annotations={Annotations.CHECKPOINTED_AT: rfc3339(NOW - 30)}),
        LATE,
        reason="(after the timeout)",
    ),
    Case(
        "checkpoint: the request on the object counts (ledger missed it)",
        "wait:waiting for",
        handshake(),
        gpu_snapshot(annotations={Annotations.RECLAIM_REQUESTED_AT: rfc3339(REQUESTED)}),
    ),
    Case(
        "checkpoint: a request older than the episode does not count",
        "checkpoint",
        handshake(),
        gpu_snapshot(annotations={Annotations.RECLAIM_REQUESTED_AT: rfc3339(NOTIFIED - 60)}),
    ),
    Case(
        "checkpoint after demand",
        "wait:no demand",
        enforce(reclaim={"when": "demand"}, checkpoint={"enabled": True}),
    ),
]


def run(case: Case) -> Plan:
    return plan(
        Cycle([alert()], case.snap, case.ledger, case.now, health=healthy()), [case.policy], REAL
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gates(case: Case) -> None:
    result = run(case)
    if case.expect.startswith("wait:"):
        assert not result.actions, result.actions
        reasons = [w.reason for w in result.waits]
        assert any(case.expect[5:] in r for r in reasons), reasons
        return
    assert [a.step.value for a in result.actions] == [case.expect], result.waits
    assert case.reason in result.actions[0].reason


def test_demand_during_grace() -> None:
    """A pending pod appears during the grace period, is scheduled elsewhere (or deleted)
    before it ends: no reclaim; it comes back: the reclaim goes ahead."""
    grace = view()
    grace = dataclasses.replace(
        grace,
        entries=tuple(
            dataclasses.replace(e, at=NOW - 1800 + i) for i, e in enumerate(grace.entries)
        ),
    )
    pod = waiting(age=1200)
    during = Case("", "", demand(), gpu_snapshot((pod,)), grace)
    assert any("grace period" in w.reason for w in run(during).waits)
    gone = Case("", "", demand(), gpu_snapshot(()), view())  # grace over, the pod left Pending
    assert not run(gone).actions
    back = Case("", "", demand(), gpu_snapshot((pod,)), view())
    assert [a.step for a in run(back).actions] == [LadderStep.RECLAIM]
