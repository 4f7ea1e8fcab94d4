"""The scheduler's NodeName, NodeAffinity, TaintToleration and NodeResourcesFit filters:
one table each, from the upstream plugins' semantics."""

from __future__ import annotations

import pytest

from guardian.engine.remediation.scheduling import (
    fits,
    node_affinity,
    node_name,
    resources_fit,
    taint_toleration,
)
from guardian.model.reclaim import (
    NodePod,
    NodeSelectorTerm,
    NodeState,
    PendingPod,
    Requirement,
    Taint,
    Toleration,
)

LABELS = {"pool": "gpu", "gpu-count": "8", "zone": "a", "nvidia.com/gpu.product": "H100"}
NODE = NodeState(
    "n1",
    labels=LABELS,
    allocatable={"cpu": 8000, "memory": 64 * 2**30, "pods": 110, "nvidia.com/gpu": 8},
)


def pod(**fields: object) -> PendingPod:
    base: dict[str, object] = {
        "namespace": "queue",
        "name": "trainer-0",
        "requests": {"nvidia.com/gpu": 1},
        "since": 0.0,
    }
    return PendingPod(**{**base, **fields})  # type: ignore[arg-type]


# ---------------------------------------------------------------- NodeName
NODE_NAME = [
    ("no nodeName", "", True),
    ("nodeName is this node", "n1", True),
    ("bound to another node", "n2", False),
]


@pytest.mark.parametrize(("case", "bound", "ok"), NODE_NAME, ids=[c[0] for c in NODE_NAME])
def test_node_name(case: str, bound: str, ok: bool) -> None:
    why = node_name(pod(node=bound), NODE)
    assert (why is None) is ok, why
    if not ok:
        assert why == "bound to node n2"


# ---------------------------------------------------------------- NodeAffinity
def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, values)


def term(*exprs: Requirement, fields: tuple[Requirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(exprs, fields)


AFFINITY: list[tuple[str, dict[str, str], tuple[NodeSelectorTerm, ...] | None, bool]] = [
    ("nothing asked", {}, None, True),
    ("nodeSelector matches", {"pool": "gpu"}, None, True),
    ("nodeSelector value differs", {"pool": "cpu"}, None, False),
    ("nodeSelector key missing", {"rack": "r1"}, None, False),
    ("nodeSelector empty value needs the key", {"rack": ""}, None, False),
    ("In matches", {}, (term(req("zone", "In", "a", "b")),), True),
    ("In misses", {}, (term(req("zone", "In", "b", "c")),), False),
    ("In on a missing key", {}, (term(req("rack", "In", "a")),), False),
    ("NotIn excludes", {}, (term(req("zone", "NotIn", "a")),), False),
    ("NotIn passes", {}, (term(req("zone", "NotIn", "b")),), True),
    ("NotIn on a missing key passes", {}, (term(req("rack", "NotIn", "a")),), True),
    ("Exists", {}, (term(req("pool", "Exists")),), True),
    ("Exists on a missing key", {}, (term(req("rack", "Exists")),), False),
    ("DoesNotExist", {}, (term(req("rack", "DoesNotExist")),), True),
    ("DoesNotExist on a present key", {}, (term(req("pool", "DoesNotExist")),), False),
    ("Gt", {}, (term(req("gpu-count", "Gt", "4")),), True),
    ("Gt equal is not greater", {}, (term(req("gpu-count", "Gt", "8")),), False),
    ("Lt", {}, (term(req("gpu-count", "Lt", "16")),), True),
    ("Lt misses", {}, (term(req("gpu-count", "Lt", "8")),), False),
    ("Gt on a non-integer label", {}, (term(req("zone", "Gt", "1")),), False),
    ("Gt on a missing key", {}, (term(req("rack", "Gt", "1")),), False),
    ("Gt with two values is malformed", {}, (term(req("gpu-count", "Gt", "1", "2")),), False),
    ("Gt with a non-integer value", {}, (term(req("gpu-count", "Gt", "1.5")),), False),
    ("In without values is malformed", {}, (term(req("zone", "In")),), False),
    ("Exists with values is malformed", {}, (term(req("zone", "Exists", "a")),), False),
    ("an unknown operator", {}, (term(req("zone", "Matches", "a")),), False),
    (
        "expressions in a term are ANDed",
        {},
        (term(req("zone", "In", "a"), req("pool", "In", "cpu")),),
        False,
    ),
    (
        "terms are ORed",
        {},
        (term(req("pool", "In", "cpu")), term(req("zone", "In", "a"))),
        True,
    ),
    ("an empty term matches nothing", {}, (term(),), False),
    ("no terms match nothing", {}, (), False),
    ("matchFields metadata.name In", {}, (term(fields=(req("metadata.name", "In", "n1"),)),), True),
    ("matchFields In another", {}, (term(fields=(req("metadata.name", "In", "n2"),)),), False),
    ("matchFields NotIn", {}, (term(fields=(req("metadata.name", "NotIn", "n1"),)),), False),
    ("matchFields NotIn another", {}, (term(fields=(req("metadata.name", "NotIn", "n2"),)),), True),
    (
        "matchFields with two values is malformed",
        {},
        (term(fields=(req("metadata.name", "In", "n1", "n2"),)),),
        False,
    ),
    (
        "matchFields ANDed with expressions",
        {},
        (term(req("zone", "In", "b"), fields=(req("metadata.name", "In", "n1"),)),),
        False,
    ),
    (
        "nodeSelector and affinity both required",
        {"pool": "cpu"},
        (term(req("zone", "In", "a")),),
        False,
    ),
]


@pytest.mark.parametrize(
    ("case", "selector", "terms", "ok"), AFFINITY, ids=[c[0] for c in AFFINITY]
)
def test_node_affinity(
    case: str, selector: dict[str, str], terms: tuple[NodeSelectorTerm, ...] | None, ok: bool
) -> None:
    why = node_affinity(pod(node_selector=selector, affinity=terms), NODE)
    assert (why is None) is ok, why


def test_node_affinity_says_what_excluded_it() -> None:
    assert node_affinity(pod(node_selector={"pool": "cpu"}), NODE) == "nodeSelector pool=cpu"
    one = (term(req("zone", "In", "b", "c")),)
    assert node_affinity(pod(affinity=one), NODE) == "required node affinity: zone In (b, c)"
    two = (term(req("zone", "In", "b")), term(req("pool", "DoesNotExist")))
    assert node_affinity(pod(affinity=two), NODE) == (
        "required node affinity: none of its 2 terms matches"
    )


# ---------------------------------------------------------------- TaintToleration
def tol(key: str = "", op: str = "Equal", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key, op, value, effect)


GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")
TAINTS: list[tuple[str, tuple[Taint, ...], tuple[Toleration, ...], bool]] = [
    ("no taints", (), (), True),
    ("NoSchedule untolerated", (GPU_TAINT,), (), False),
    ("NoExecute untolerated", (Taint("maint", "", "NoExecute"),), (), False),
    ("PreferNoSchedule is not a filter", (Taint("spot", "true", "PreferNoSchedule"),), (), True),
    ("Equal key and value", (GPU_TAINT,), (tol("nvidia.com/gpu", "Equal", "present"),), True),
    ("Equal, value differs", (GPU_TAINT,), (tol("nvidia.com/gpu", "Equal", "absent"),), False),
    ("empty operator means Equal", (GPU_TAINT,), (tol("nvidia.com/gpu", "", "present"),), True),
    ("Exists on the key", (GPU_TAINT,), (tol("nvidia.com/gpu", "Exists"),), True),
    ("Exists on another key", (GPU_TAINT,), (tol("other", "Exists"),), False),
    ("empty key with Exists tolerates all", (GPU_TAINT,), (tol("", "Exists"),), True),
    (
        "effect must match",
        (GPU_TAINT,),
        (tol("nvidia.com/gpu", "Exists", effect="NoExecute"),),
        False,
    ),
    (
        "same effect",
        (GPU_TAINT,),
        (tol("nvidia.com/gpu", "Exists", effect="NoSchedule"),),
        True,
    ),
    ("empty effect matches every effect", (GPU_TAINT,), (tol("nvidia.com/gpu", "Exists"),), True),
    (
        "every filtered taint needs a toleration",
        (GPU_TAINT, Taint("maint", "", "NoExecute")),
        (tol("nvidia.com/gpu", "Exists"),),
        False,
    ),
    (
        "one toleration per taint",
        (GPU_TAINT, Taint("maint", "", "NoExecute")),
        (tol("nvidia.com/gpu", "Exists"), tol("maint", "Exists", effect="NoExecute")),
        True,
    ),
    ("an unknown operator tolerates nothing", (GPU_TAINT,), (tol("nvidia.com/gpu", "Gt"),), False),
    (
        "cordoned: the unschedulable taint",
        (Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),),
        (),
        False,
    ),
]


@pytest.mark.parametrize(
    ("case", "taints", "tolerations", "ok"), TAINTS, ids=[c[0] for c in TAINTS]
)
def test_taint_toleration(
    case: str, taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], ok: bool
) -> None:
    node = NodeState("n1", taints=taints, allocatable=NODE.allocatable)
    why = taint_toleration(pod(tolerations=tolerations), node)
    assert (why is None) is ok, why


def test_taint_toleration_names_the_taint() -> None:
    node = NodeState("n1", taints=(GPU_TAINT,))
    assert taint_toleration(pod(), node) == "untolerated taint nvidia.com/gpu=present:NoSchedule"


# ---------------------------------------------------------------- NodeResourcesFit
GiB = 2**30
ALLOC = {"cpu": 8000, "memory": 64 * GiB, "pods": 3, "nvidia.com/gpu": 8, "example.com/nic": 1}
IDLE = NodePod("ml", "idle-0", {"cpu": 4000, "memory": 32 * GiB, "nvidia.com/gpu": 4})
OTHER = NodePod("ml", "other-0", {"cpu": 2000, "memory": 16 * GiB, "nvidia.com/gpu": 2})
GONE = {("ml", "idle-0")}
FIT: list[tuple[str, dict[str, int], tuple[NodePod, ...], bool]] = [
    ("fits an empty node", {"cpu": 8000}, (), True),
    ("fits once the idle pods are gone", {"cpu": 6000, "nvidia.com/gpu": 6}, (IDLE, OTHER), True),
    ("the other pods stay", {"cpu": 6001}, (IDLE, OTHER), False),
    ("memory", {"memory": 48 * GiB}, (IDLE, OTHER), True),
    ("memory short", {"memory": 48 * GiB + 1}, (IDLE, OTHER), False),
    ("GPUs short", {"nvidia.com/gpu": 7}, (IDLE, OTHER), False),
    ("another extended resource", {"example.com/nic": 1}, (IDLE, OTHER), True),
    ("an extended resource the node lacks", {"vendor.io/fpga": 1}, (), False),
    ("a MIG profile the node does not offer", {"nvidia.com/mig-1g.10gb": 1}, (), False),
    ("zero requests fit", {"cpu": 0}, (IDLE, OTHER), True),
    (
        "too many pods",
        {"cpu": 1},
        (OTHER, NodePod("a", "b"), NodePod("c", "d")),
        False,
    ),
    (
        "one more pod once the idle ones are gone",
        {"cpu": 1},
        (IDLE, OTHER, NodePod("a", "b")),
        True,
    ),
]


@pytest.mark.parametrize(("case", "asks", "pods", "ok"), FIT, ids=[c[0] for c in FIT])
def test_resources_fit(
    case: str, asks: dict[str, int], pods: tuple[NodePod, ...], ok: bool
) -> None:
    node = NodeState("n1", allocatable=ALLOC, pods=pods)
    why = resources_fit(pod(requests={}, resources=asks), node, GONE)
    assert (why is None) is ok, why


def test_resources_fit_does_not_count_the_pod_against_itself() -> None:
    node = NodeState("n1", allocatable=ALLOC, pods=(NodePod("queue", "trainer-0", {"cpu": 8000}),))
    assert resources_fit(pod(resources={"cpu": 8000}), node) is None


def test_resources_fit_says_what_is_short() -> None:
    node = NodeState("n1", allocatable=ALLOC, pods=(IDLE, OTHER))
    why = resources_fit(pod(requests={}, resources={"cpu": 7000, "memory": 60 * GiB}), node, GONE)
    assert why == "insufficient cpu 7 > 6 free, memory 60Gi > 48Gi free"
    assert resources_fit(pod(), NodeState("n1", allocatable={"nvidia.com/gpu": 8})) == (
        "too many pods (0 of 0 stay)"
    )


def test_requests_come_from_both_maps() -> None:
    """An extended resource counted in ``requests`` only (the planner's older callers)."""
    node = NodeState("n1", allocatable={"pods": 10, "nvidia.com/gpu": 1})
    assert resources_fit(pod(requests={"nvidia.com/gpu": 2}), node) is not None
    assert resources_fit(pod(requests={"nvidia.com/gpu": 1}), node) is None


def test_fits_reports_in_the_schedulers_order() -> None:
    node = NodeState("n1", labels={"pool": "gpu"}, taints=(GPU_TAINT,), allocatable={"pods": 1})
    everything_wrong = pod(node="n2", node_selector={"pool": "cpu"}, resources={"cpu": 1})
    assert fits(everything_wrong, node) == "bound to node n2"
    tainted = fits(pod(node_selector={"pool": "cpu"}), node)
    assert tainted == "untolerated taint nvidia.com/gpu=present:NoSchedule"
    tolerant = (tol("", "Exists"),)
    assert fits(pod(node_selector={"pool": "cpu"}, tolerations=tolerant), node) == (
        "nodeSelector pool=cpu"
    )
    assert fits(pod(tolerations=tolerant), node) == "insufficient nvidia.com/gpu 1 > 0 free"
