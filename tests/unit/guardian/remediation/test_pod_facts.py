"""What the filters read from pod and node objects: requests summed as the scheduler sums
them, node affinity, tolerations, taints and allocatable; and the Pending-pod record."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.app.remediation.pending_pods import pending_pod
from guardian.engine.remediation.pod_facts import (
    node_state,
    pod_requests,
    required_affinity,
    tolerations,
)
from guardian.model.reclaim import NodeSelectorTerm, Requirement, Taint, Toleration

GiB = 2**30


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
              **extra: Any) -> dict[str, Any]:  # fmt: skip
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def with_spec(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec}


REQUESTS = [
    ("one container", with_spec(containers=[container({"cpu": "500m", "memory": "1Gi"})]),
     {"cpu": 500, "memory": GiB}),
    ("containers add up",
     with_spec(containers=[container({"cpu": "1"}), container({"cpu": "250m"})]),
     {"cpu": 1250}),
    ("a limit is the request where none is set",
     with_spec(containers=[container(limits={"nvidia.com/gpu": "2", "memory": "2Gi"})]),
     {"nvidia.com/gpu": 2, "memory": 2 * GiB}),
    ("the request wins over the limit",
     with_spec(containers=[container({"cpu": "1"}, {"cpu": "4"})]), {"cpu": 1000}),
    ("a larger init container",
     with_spec(containers=[container({"cpu": "1"})], initContainers=[container({"cpu": "3"})]),
     {"cpu": 3000}),
    ("a smaller init container",
     with_spec(containers=[container({"cpu": "2"})], initContainers=[container({"cpu": "1"})]),
     {"cpu": 2000}),
    ("a sidecar adds to the containers",
     with_spec(containers=[container({"cpu": "1"})],
               initContainers=[container({"cpu": "500m"}, restartPolicy="Always")]),
     {"cpu": 1500}),
    ("an init container after a sidecar runs beside it",
     with_spec(containers=[container({"cpu": "1"})],
               initContainers=[container({"cpu": "1"}, restartPolicy="Always"),
                               container({"cpu": "2"})]),
     {"cpu": 3000}),
    ("overhead is added",
     with_spec(containers=[container({"cpu": "1"})], overhead={"cpu": "250m"}),
     {"cpu": 1250}),
    ("nothing requested", with_spec(containers=[container()]), {}),
]  # fmt: skip


@pytest.mark.parametrize(("case", "pod", "expect"), REQUESTS, ids=[c[0] for c in REQUESTS])
def test_pod_requests(case: str, pod: dict[str, Any], expect: dict[str, int]) -> None:
    assert pod_requests(pod) == expect


def test_required_affinity_and_tolerations() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": []}}
            ],
        }
    }
    pod = with_spec(
        affinity=affinity,
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                     {"key": "k", "value": "v"}],
    )  # fmt: skip
    assert required_affinity(pod) == (
        NodeSelectorTerm((Requirement("pool", "In", ("gpu",)),)),
        NodeSelectorTerm((), (Requirement("metadata.name", "In", ("n1",)),)),
    )
    assert tolerations(pod) == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("k", "Equal", "v", ""),
    )
    assert required_affinity(with_spec(affinity={"nodeAffinity": {}})) is None
    assert required_affinity(with_spec()) is None


def test_node_state_leaves_terminal_pods_out() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"pool": "gpu"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "7910m", "memory": "128974848Ki", "pods": "110",
                                   "nvidia.com/gpu": "8", "bad": "x"}},
    }  # fmt: skip
    running = {**with_spec(containers=[container({"cpu": "1"})]), "status": {"phase": "Running"}}
    done = {**running, "status": {"phase": "Succeeded"}}
    failed = {**running, "status": {"phase": "Failed"}}
    state = node_state(node, [running, done, failed])
    assert state.name == "n1"
    assert dict(state.labels) == {"pool": "gpu"}
    assert state.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert dict(state.allocatable) == {
        "cpu": 7910,
        "memory": 128974848 * 1024,
        "pods": 110,
        "nvidia.com/gpu": 8,
    }
    assert [(p.name, dict(p.requests)) for p in state.pods] == [("p", {"cpu": 1000})]


def test_a_pending_pod_keeps_what_the_filters_compare() -> None:
    obj = {
        "metadata": {"name": "t", "namespace": "q", "creationTimestamp": "2023-11-16T01:00:00Z"},
        "spec": {
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"operator": "Exists"}],
            "containers": [container({"cpu": "2", "memory": "8Gi"}, {"nvidia.com/gpu": "1"})],
        },
        "status": {"phase": "Pending"},
    }
    found = pending_pod(obj)
    assert found is not None
    assert dict(found.requests) == {"nvidia.com/gpu": 1}
    assert dict(found.node_selector) == {"pool": "gpu"}
    assert found.affinity is None
    assert found.tolerations == (Toleration("", "Exists", "", ""),)
    assert found.asks() == {"cpu": 2000, "memory": 8 * GiB, "nvidia.com/gpu": 1}
