"""Demand judged on the nodes as read through the real client from the fake API, and the
checkpoint handshake's times as the executor writes them (issue #34)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.app.remediation.pending_pods import pending_pod
from guardian.engine.remediation.demand import demand
from guardian.engine.remediation.gates import Handshake, checkpoint, requested_at
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations, ReclaimPolicy
from guardian.model.reclaim import ClusterSnapshot, PendingPod, PlannedAction
from guardian.model.remediation_events import LadderStep, WorkloadRef
from guardian.model.times import rfc3339
from testbed.kubeapi import FakeKubeAPI, ResourceType
from testbed.kubeapi import builders as b
from tests.plugins.kube_fixture import LWS

NODE = ResourceType("", "v1", "Node", "nodes", namespaced=False)
TRAIN = WorkloadRef("apps/v1", "Deployment", "ml", "train")
NOW = 1_700_000_000.0


@pytest.fixture
def kube_resources() -> Sequence[ResourceType]:
    return (LWS, NODE)


def _train_on(kube: FakeKubeAPI, node: str) -> None:
    dep = kube.create(b.deployment("train", "ml", replicas=1))
    rs = kube.create(b.replicaset("train-x", "ml", owners=[b.owner_reference(dep)]))
    pod = b.pod("train-x-1", "ml", node=node, owners=[b.owner_reference(rs)], gpus=2)
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "4", "memory": "32Gi"}
    kube.create(pod)


def _waiting(name: str, **spec: Any) -> dict[str, Any]:
    pod = b.pod(name, "research", phase="Pending", gpus=1)
    pod["metadata"]["creationTimestamp"] = rfc3339(NOW - 3600)
    pod["spec"].update(spec)
    return pod


def _snapshot(reader: KubeReader, *pending: dict[str, Any]) -> ClusterSnapshot:
    found = tuple(p for p in map(pending_pod, pending) if p is not None)
    snap = reader.snapshot([("ml", "train-x-1")], [], "gpu-guardian")
    return reader.with_nodes(dataclasses.replace(snap, pending_pods=found))


def test_the_node_and_every_pod_bound_to_it(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(
        b.node("n1", labels={"pool": "gpu"}, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    )
    _train_on(kube, "n1")
    kube.create(b.pod("busy", "other", node="n1", gpus=4))
    kube.create(b.pod("done", "other", node="n1", phase="Succeeded", gpus=4))
    kube.create(b.pod("elsewhere", "other", node="n2", gpus=4))

    state = reader.node("n1")

    assert dict(state.labels) == {"pool": "gpu"}
    assert [(t.key, t.effect) for t in state.taints] == [("gpu", "NoSchedule")]
    assert state.allocatable["cpu"] == 8000
    assert state.allocatable["memory"] == 64 * 2**30
    assert {(p.namespace, p.name): dict(p.requests) for p in state.pods} == {
        ("ml", "train-x-1"): {"cpu": 4000, "memory": 32 * 2**30, "nvidia.com/gpu": 2},
        ("other", "busy"): {"nvidia.com/gpu": 4},
    }


def test_nodes_are_read_only_while_pods_wait(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.node("n1"))
    _train_on(kube, "n1")
    kube.clear_requests()

    quiet = _snapshot(reader)

    assert quiet.nodes == {}
    assert not kube.requests(path="/nodes")
    busy = _snapshot(reader, _waiting("trainer-0"))
    assert set(busy.nodes) == {"n1"}
    assert [r.verb for r in kube.requests(path="/nodes")] == ["get"]


def test_a_node_that_cannot_be_read_fits_nothing(kube: FakeKubeAPI, reader: KubeReader) -> None:
    _train_on(kube, "gone")

    snap = _snapshot(reader, _waiting("trainer-0"))

    assert snap.nodes == {}
    assert "404" in snap.node_errors["gone"]
    found = demand(snap.workloads[TRAIN], snap, 600, NOW)
    assert not found.waiting
    assert "node gone could not be read (GET /api/v1/nodes/gone: 404" in found.unknown()


def test_demand_from_the_objects(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.node("n1", labels={"pool": "gpu"}))
    _train_on(kube, "n1")
    busy = b.pod("busy", "other", node="n1", gpus=6)  # of 8 GPUs, 8 CPUs: 2 and 4 free
    busy["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "4"}  # once train goes
    kube.create(busy)
    fits = _waiting("fits", nodeSelector={"pool": "gpu"})
    cpu_pool = _waiting("cpu-pool", nodeSelector={"pool": "cpu"})
    too_big = _waiting("too-big")
    too_big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "5"}

    snap = _snapshot(reader, fits, cpu_pool, too_big)
    found = demand(snap.workloads[TRAIN], snap, 600, NOW)

    assert [p.name for p in found.waiting] == ["fits"]
    assert found.placed == {("research", "fits"): "n1"}
    assert {v.pod.name: v.why_not() for v in found.misfits} == {
        "cpu-pool": "nodeSelector pool=cpu",
        "too-big": "insufficient cpu 5 > 4 free",
    }


def _policy() -> ReclaimPolicy:
    return ReclaimPolicy.model_validate(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ReclaimPolicy",
            "metadata": {"name": "p"},
            "spec": {"checkpoint": {"enabled": True, "timeout": "15m"}},
        }
    )


def test_an_ack_in_the_second_of_the_written_request_counts(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    """The executor writes the request cut to the second; the workload answers within that
    second: the ack counts with the ledger's exact time and with the annotation's."""
    kube.create(b.deployment("train", "ml", replicas=1))
    asked = NOW + 0.789
    action = PlannedAction(
        TRAIN, LadderStep.CHECKPOINT, "p", "ep1", "idle", False, LabelSet({"alertname": "X"})
    )
    executor.apply(action, reader.workload(TRAIN), asked)
    written = kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    assert written[Annotations.RECLAIM_REQUESTED_AT] == rfc3339(NOW)
    ack = {Annotations.CHECKPOINTED_AT: written[Annotations.RECLAIM_REQUESTED_AT]}
    kube.patch("Deployment", "train", {"metadata": {"annotations": ack}}, "ml")
    ws = reader.workload(TRAIN)

    for recorded in (asked, None):  # the ledger's step; after a restart, the object's
        requested = requested_at(ws, recorded, NOW - 3600)
        move = checkpoint(_policy(), ws, requested, asked + 30)
        assert move.kind is Handshake.RECLAIM, move.why
        assert move.why == f"; checkpointed at {rfc3339(NOW)}"


def test_a_bound_pod_is_not_waiting() -> None:
    bound = _waiting("bound")
    bound["spec"]["nodeName"] = "n2"
    assert pending_pod(bound) is None
    assert isinstance(pending_pod(_waiting("free")), PendingPod)
