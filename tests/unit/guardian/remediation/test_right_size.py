"""``partial: rightSize`` in the planner: the shapes a scale-down can and cannot remove
exactly the idle pods of (workload-semantics: the ReplicaSet's ranking, StatefulSet
ordinals, Jobs, HPAs, one pod holding several GPUs), and the rest get advice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.reclaim import (
    ActionKind,
    FiringAlert,
    HpaState,
    LedgerEntry,
    LedgerView,
    MemberPod,
    NodeState,
    PendingPod,
    Plan,
    PodOwner,
    RightSize,
    WorkloadState,
)
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef

from .factories import NOW, alert, enforce, healthy, member, snapshot, workload

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))


def pods(name: str, n: int) -> tuple[MemberPod, ...]:
    return tuple(dataclasses.replace(member(f"{name}-{i}"), owner=f"{name}-rs") for i in range(n))


def with_pod(members: tuple[MemberPod, ...], i: int, **change: Any) -> tuple[MemberPod, ...]:
    return tuple(dataclasses.replace(m, **change) if k == i else m for k, m in enumerate(members))


@dataclass
class Row:
    id: str
    expect: RightSize | str  # the right-size, or a substring of the wait's reason
    members: tuple[MemberPod, ...] = field(default_factory=lambda: pods("web", 3))
    idle: tuple[str, ...] = ("web-1",)
    kind: str = "Deployment"
    replicas: int | None = 3
    hpa: HpaState | None = None
    partial: str = "rightSize"
    alerts: tuple[FiringAlert, ...] = ()
    demand: tuple[PendingPod, ...] | None = None


ROWS = [
    Row("deployment: the idle replica", RightSize(2, ("web-1",), -1)),
    Row(
        "deployment: two idle of three",
        RightSize(1, ("web-0", "web-2"), -1),
        idle=("web-0", "web-2"),
    ),
    Row(
        "partial: notify never acts",
        "partly idle, not reclaimed (1 of 3 pods idle",
        partial="notify",
    ),
    Row(
        "a kept pod with a cost of -5: the idle ones get -6",
        RightSize(2, ("web-1",), -6),
        members=with_pod(pods("web", 3), 0, deletion_cost=-5),
    ),
    Row(
        "a kept pod already at the lowest cost",
        "already has the lowest pod-deletion-cost",
        members=with_pod(pods("web", 3), 2, deletion_cost=-(2**31)),
    ),
    Row("a surge pod: 4 pods for 3 replicas", "4 pods for 3 replicas", members=pods("web", 4)),
    Row(
        "a kept pod not Ready: the scale-down would take it first",
        "web-2 not scheduled, Running and Ready",
        members=with_pod(pods("web", 3), 2, ready=False),
    ),
    Row(
        "a Pending pod",
        "web-2 not scheduled, Running and Ready",
        members=with_pod(pods("web", 3), 2, phase="Pending", node=""),
    ),
    Row(
        "a rollout: two ReplicaSets",
        "a rollout is in progress",
        members=with_pod(pods("web", 3), 2, owner="web-rs2"),
    ),
    Row(
        "an HPA scales it",
        "HorizontalPodAutoscaler web-hpa scales it",
        hpa=HpaState("web-hpa", 1, 5),
    ),
    Row(
        "statefulset: its highest ordinal",
        RightSize(2, ("web-2",), None),
        kind="StatefulSet",
        idle=("web-2",),
    ),
    Row(
        "statefulset: its lowest ordinal",
        "are not its highest ordinals: a scale-down to 2 removes web-2",
        kind="StatefulSet",
        idle=("web-0",),
    ),
    Row(
        "a Job with parallelism",
        "a Job cannot be scaled to remove chosen pods",
        kind="Job",
        replicas=None,
    ),
    Row(
        "one pod, 8 GPUs, 1 busy: advice",
        "not right-sized: none of its pods is idle as a whole; advice: web-0 uses 1 of its 8 "
        "GPUs: request 1",
        members=(dataclasses.replace(member("web-0", gpus=8), owner="web-rs"),),
        replicas=1,
        idle=(),
        alerts=tuple(alert("web-0", uuid=f"GPU-{g}") for g in range(7)),
    ),
    Row(
        "demand: the waiting pod asks for more than the right-size frees",
        "no demand",
        demand=(PendingPod("q", "big", {"nvidia.com/gpu": 2}, NOW - 3600),),
    ),
    Row(
        "demand: a pod that fits what the right-size frees",
        RightSize(2, ("web-1",), -1),
        demand=(PendingPod("q", "small", {"nvidia.com/gpu": 1}, NOW - 3600),),
    ),
]


def _plan(row: Row) -> tuple[WorkloadState, Plan]:
    r = WorkloadRef("batch/v1" if row.kind == "Job" else "apps/v1", row.kind, "ml", "web")
    action = ActionKind.SUSPEND if row.kind == "Job" else ActionKind.SCALE
    ws = workload(r, action=action, replicas=row.replicas, members=row.members, hpa=row.hpa)
    ws = dataclasses.replace(ws, pods=tuple(m.name for m in row.members))
    owned = {("ml", m.name): r for m in row.members}
    snap = snapshot(ws, pods=owned)
    if row.demand is not None:
        owners = {
            k: PodOwner("ml", k[1], r, node="n1", uid="u", requests=dict(m.gpus))
            for k, m in zip(owned, row.members, strict=True)
        }
        node = NodeState("n1", allocatable={"nvidia.com/gpu": 8, "pods": 110})
        snap = dataclasses.replace(
            snap, pod_owners=owners, pending_pods=row.demand, nodes={"n1": node}
        )
    episode = workload_episode(r, NOW - 7200)
    done = LedgerEntry(episode, r, LadderStep.NOTIFY, StepOutcome.APPLIED, NOW - 7000, "p", False)
    view = LedgerView({r: (episode, NOW - 7200, "p")}, (done,))
    alerts = list(row.alerts) or [alert(p) for p in row.idle]
    spec: dict[str, Any] = {
        "partial": row.partial,
        "ladder": {"gracePeriod": "1h", "annotate": False},
    }
    if row.demand is not None:
        spec["reclaim"] = {"when": "demand", "pendingFor": "10m"}
    result = plan(Cycle(alerts, snap, view, NOW, health=healthy()), [enforce(**spec)], REAL)
    return ws, result


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_right_size(row: Row) -> None:
    _ws, result = _plan(row)
    actions, waits = result.actions, result.waits
    if isinstance(row.expect, RightSize):
        [action] = actions
        assert (action.step, action.right_size) == (LadderStep.RECLAIM, row.expect), waits
        assert f"right-size: {len(row.expect.remove)} of" in action.reason
        return
    assert not actions, actions
    [wait] = [w for w in waits if w.workload is not None]
    assert row.expect in wait.reason
    if "no demand" not in row.expect:
        assert (wait.kind, wait.partly_idle) == (HoldKind.EVIDENCE, True)


def test_a_wholly_idle_workload_is_reclaimed_as_before() -> None:
    row = Row("all idle", "", idle=("web-0", "web-1", "web-2"))
    _ws, result = _plan(row)
    [action] = result.actions
    assert (action.step, action.right_size) == (LadderStep.RECLAIM, None)
    assert "all 3 pods idle" in action.reason
