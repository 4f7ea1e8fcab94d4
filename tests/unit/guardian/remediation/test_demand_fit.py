"""Demand is a pod that could be scheduled on the freed GPUs: the planner compares each
waiting pod with the nodes the idle workload runs on (issue #34)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.demand import demand as judge_demand
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.reclaim import (
    ClusterSnapshot,
    LedgerEntry,
    LedgerView,
    NodePod,
    NodeSelectorTerm,
    NodeState,
    PendingPod,
    PodOwner,
    Requirement,
    Taint,
    Toleration,
)
from guardian.model.remediation_events import LadderStep, StepOutcome

from .factories import NOW, alert, enforce, healthy, member, ref, snapshot, workload

GiB = 2**30
GPU = "nvidia.com/gpu"
REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
EPISODE = workload_episode(ref(), NOW - 7200)


def view() -> LedgerView:
    steps = ((LadderStep.NOTIFY, NOW - 7000), (LadderStep.ANNOTATE, NOW - 6940))
    entries = tuple(
        LedgerEntry(EPISODE, ref(), s, StepOutcome.APPLIED, at, "p", False) for s, at in steps
    )
    return LedgerView({ref(): (EPISODE, NOW - 7200, "p")}, entries)


def node(
    name: str = "n1",
    *,
    taints: tuple[Taint, ...] = (),
    idle: tuple[str, ...] = ("web-1",),
    gpus: int = 4,
) -> NodeState:
    """16 CPUs, 128Gi, ``gpus`` GPUs; the idle pods (4 CPUs, 32Gi, 2 GPUs each) and one other
    pod (8 CPUs, 64Gi, 2 GPUs) on it: once the idle ones are gone, 8 CPUs, 64Gi, 2 GPUs free."""
    pods = tuple(NodePod("ml", p, {"cpu": 4000, "memory": 32 * GiB, GPU: 2}) for p in idle)
    other = NodePod("other", f"busy-{name}", {"cpu": 8000, "memory": 64 * GiB, GPU: 2})
    return NodeState(
        name,
        labels={"pool": "gpu", "kubernetes.io/hostname": name},
        taints=taints,
        allocatable={"cpu": 16000, "memory": 128 * GiB, "pods": 110, GPU: gpus},
        pods=(*pods, other),
    )


def cluster(
    *pending: PendingPod,
    nodes: Mapping[str, NodeState] | None = None,
    errors: Mapping[str, str] | None = None,
    placed: Mapping[str, str] | None = None,  # the workload's pods -> their node
    resource: str = GPU,
) -> ClusterSnapshot:
    where = dict(placed or {"web-1": "n1"})
    members = tuple(dataclasses.replace(member(p), node=n) for p, n in where.items())
    ws = dataclasses.replace(workload(members=members), pods=tuple(where))
    owners = {
        ("ml", p): PodOwner("ml", p, ws.ref, node=n, uid=f"uid-{p}", requests={resource: 2})
        for p, n in where.items()
    }
    base = snapshot(ws, pods=dict.fromkeys(owners, ws.ref))
    return dataclasses.replace(
        base,
        pod_owners=owners,
        pending_pods=pending,
        nodes={"n1": node()} if nodes is None else nodes,
        node_errors=dict(errors or {}),
    )


def waiting(name: str = "trainer-0", gpus: int = 1, **fields: Any) -> PendingPod:
    requests = {GPU: gpus} if gpus else {}
    return PendingPod("research", name, fields.pop("requests", requests), NOW - 900, **fields)


@dataclass
class Case:
    id: str
    expect: str  # "reclaim", or "wait:<substring>"
    snap: ClusterSnapshot
    reason: tuple[str, ...] = field(default_factory=tuple)  # substrings of the reason


ON_N1 = "could run on node n1 once these GPUs are freed"
TOLERATE_GPU = (Toleration(GPU, "Exists", "", "NoSchedule"),)
GPU_TAINT = Taint(GPU, "present", "NoSchedule")
ZONE_B = (NodeSelectorTerm((Requirement("pool", "In", ("h100",)),)),)
TWO_NODES = {"web-1": "n1", "web-2": "n2"}

CASES = [
    Case("fits", "reclaim", cluster(waiting()), ("research/trainer-0 (Pending since", ON_N1)),
    Case(
        "nodeSelector excludes the node",
        "wait:no demand: 1 pod waits for nvidia.com/gpu but it does not fit node n1: "
        "research/trainer-0 (nodeSelector pool=cpu)",
        cluster(waiting(node_selector={"pool": "cpu"})),
    ),
    Case("nodeSelector matches", "reclaim", cluster(waiting(node_selector={"pool": "gpu"}))),
    Case(
        "required node affinity excludes the node",
        "wait:(required node affinity: pool In (h100))",
        cluster(waiting(affinity=ZONE_B)),
    ),
    Case(
        "an untolerated taint",
        "wait:(untolerated taint nvidia.com/gpu=present:NoSchedule)",
        cluster(waiting(), nodes={"n1": node(taints=(GPU_TAINT,))}),
    ),
    Case(
        "a tolerated taint",
        "reclaim",
        cluster(waiting(tolerations=TOLERATE_GPU), nodes={"n1": node(taints=(GPU_TAINT,))}),
    ),
    Case(
        "a PreferNoSchedule taint does not filter",
        "reclaim",
        cluster(waiting(), nodes={"n1": node(taints=(Taint("spot", "", "PreferNoSchedule"),))}),
    ),
    Case(
        "CPU the other pod keeps",
        "wait:(insufficient cpu 9 > 8 free)",
        cluster(waiting(resources={"cpu": 9000, GPU: 1})),
    ),
    Case(
        "CPU the idle pod frees",
        "reclaim",
        cluster(waiting(resources={"cpu": 8000, "memory": 64 * GiB, GPU: 1})),
    ),
    Case(
        "more GPUs than the node frees",
        "wait:(asks 4 nvidia.com/gpu, n1 frees 2 nvidia.com/gpu)",
        cluster(waiting(gpus=4)),
    ),
    Case(
        "a MIG profile is not a whole GPU",
        "wait:no demand: no pod that could use its GPUs (2 nvidia.com/mig-1g.10gb on one node)",
        cluster(waiting(), resource="nvidia.com/mig-1g.10gb"),
    ),
    Case(
        "a time-sliced replica is its own resource",
        "reclaim",
        cluster(
            waiting(requests={"nvidia.com/gpu.shared": 1}),
            resource="nvidia.com/gpu.shared",
            nodes={
                "n1": dataclasses.replace(
                    node(), allocatable={"pods": 110, "nvidia.com/gpu.shared": 4}
                )
            },
        ),
    ),
    Case(
        "bound to another node",
        "wait:(bound to node n2)",
        cluster(waiting(node="n2")),
    ),
    Case(
        "the node could not be read",
        "wait:reclaim.when is demand and node n1 could not be read (GET /api/v1/nodes/n1: 403): "
        "cannot tell whether research/trainer-0 could run there",
        cluster(waiting(), nodes={}, errors={"n1": "GET /api/v1/nodes/n1: 403"}),
    ),
    Case(
        "the node is not in the snapshot",
        "wait:reclaim.when is demand and node n1 was not read: cannot tell whether",
        cluster(waiting(), nodes={}),
    ),
    Case(
        "none of two fits",
        "wait:no demand: 2 pods wait for nvidia.com/gpu but none fits node n1: "
        "research/a (nodeSelector pool=cpu), research/b (bound to node n9)",
        cluster(waiting("a", node_selector={"pool": "cpu"}), waiting("b", node="n9")),
    ),
    Case(
        "one of two fits",
        "reclaim",
        cluster(waiting("a", node_selector={"pool": "cpu"}), waiting("b")),
        ("research/b (Pending since", ON_N1),
    ),
    Case(
        "it fits the second node",
        "reclaim",
        cluster(
            waiting(
                affinity=(
                    NodeSelectorTerm((Requirement("kubernetes.io/hostname", "In", ("n2",)),)),
                )
            ),
            nodes={"n1": node(), "n2": node("n2", idle=("web-2",))},
            placed=TWO_NODES,
        ),
        ("could run on node n2 once these GPUs are freed",),
    ),
    Case(
        "it fits a node read; another could not be read",
        "reclaim",
        cluster(waiting(), nodes={"n1": node()}, placed=TWO_NODES),
        (ON_N1,),
    ),
    Case(
        "no fit on the node read, the other unknown",
        "wait:node n2 was not read",
        cluster(waiting(node_selector={"pool": "cpu"}), nodes={"n1": node()}, placed=TWO_NODES),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_demand_fits_the_node(case: Case) -> None:
    policy = enforce(reclaim={"when": "demand", "pendingFor": "10m"})
    alerts = [alert(o.pod, node=o.node or "") for o in case.snap.pod_owners.values()]
    result = plan(Cycle(alerts, case.snap, view(), NOW, health=healthy()), [policy], REAL)
    if case.expect.startswith("wait:"):
        assert not result.actions, result.actions
        reasons = [w.reason for w in result.waits]
        assert any(case.expect[5:] in r for r in reasons), reasons
        return
    assert [a.step.value for a in result.actions] == [case.expect], result.waits
    for part in case.reason:
        assert part in result.actions[0].reason, result.actions[0].reason


def test_the_workloads_own_pods_are_what_leaves_the_node() -> None:
    """Only the idle workload's pods (by the alerts' pods and its members) leave the node:
    a pod of another namespace with the same name stays."""
    n1 = dataclasses.replace(node(), pods=(*node().pods, NodePod("other", "web-1", {"cpu": 4000})))
    snap = cluster(waiting(resources={"cpu": 8000, GPU: 1}), nodes={"n1": n1})
    ws = snap.workloads[ref()]
    found = judge_demand(ws, snap, 600, NOW)
    assert not found.waiting
    assert found.misfits[0].why == {"n1": "insufficient cpu 8 > 4 free"}


def test_a_pod_that_fits_is_placed_on_its_node() -> None:
    snap = cluster(waiting("a"), waiting("b", node_selector={"pool": "cpu"}))
    found = judge_demand(snap.workloads[ref()], snap, 600, NOW)
    assert [p.name for p in found.waiting] == ["a"]
    assert found.placed == {("research", "a"): "n1"}
    assert [v.pod.name for v in found.misfits] == ["b"]
