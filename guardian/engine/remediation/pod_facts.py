"""What the scheduler's filters read from pod and node objects, as model records.

Pure functions of the objects as the API returns them (dicts): the adapters call them
on what they read; engine/remediation/scheduling.py compares the records.

A pod's requests are summed as the scheduler sums them (``resource.PodRequests``): its
containers' requests (a limit counts where a container sets no request, as the API
server defaults it), sidecars (init containers with ``restartPolicy: Always``) added,
the largest of each regular init container (with the sidecars started before it) where
that is more, and ``spec.overhead``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from guardian.engine.remediation.quantity import amount
from guardian.model.reclaim import NodePod, NodeSelectorTerm, NodeState, Requirement, Taint
from guardian.model.reclaim import Toleration as Tol

TERMINAL = frozenset({"Succeeded", "Failed"})


def _amounts(resources: Mapping[str, Any] | None) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, quantity in (resources or {}).items():
        value = amount(str(name), quantity)
        if value is not None:
            found[str(name)] = value
    return found


def container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    return {**_amounts(resources.get("limits")), **_amounts(resources.get("requests"))}


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _at_least(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Resource -> what ``pod`` needs on a node (cpu in millicores, the rest in units)."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        _add(total, container_requests(container))
    sidecars: dict[str, int] = {}
    init: dict[str, int] = {}
    for container in spec.get("initContainers") or []:
        asked = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, asked)
            _add(sidecars, asked)
            _at_least(init, sidecars)
        else:
            during = dict(asked)
            _add(during, sidecars)
            _at_least(init, during)
    _at_least(total, init)
    _add(total, _amounts(spec.get("overhead")))
    return {name: value for name, value in total.items() if value > 0}


def _requirements(raw: Iterable[Any] | None) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            str(r.get("key") or ""),
            str(r.get("operator") or ""),
            tuple(str(v) for v in r.get("values") or ()),
        )
        for r in raw or ()
        if isinstance(r, Mapping)
    )


def required_affinity(pod: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...] | None:
    """The pod's required node affinity terms; None when it sets none."""
    spec = pod.get("spec") or {}
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    return tuple(
        NodeSelectorTerm(
            _requirements(term.get("matchExpressions")), _requirements(term.get("matchFields"))
        )
        for term in required.get("nodeSelectorTerms") or ()
        if isinstance(term, Mapping)
    )


def tolerations(pod: Mapping[str, Any]) -> tuple[Tol, ...]:
    return tuple(
        Tol(
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in (pod.get("spec") or {}).get("tolerations") or ()
        if isinstance(t, Mapping)
    )


def node_selector(pod: Mapping[str, Any]) -> dict[str, str]:
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return {str(k): str(v) for k, v in selector.items()}


def node_pod(pod: Mapping[str, Any]) -> NodePod | None:
    """A pod bound to a node as the node's account has it; None when it is terminal."""
    if (pod.get("status") or {}).get("phase") in TERMINAL:
        return None
    meta = pod.get("metadata") or {}
    return NodePod(str(meta.get("namespace") or ""), str(meta.get("name") or ""), pod_requests(pod))


def node_state(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> NodeState:
    """A node object and the pods bound to it (terminal ones are left out)."""
    meta = node.get("metadata") or {}
    taints = tuple(
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (node.get("spec") or {}).get("taints") or ()
        if isinstance(t, Mapping)
    )
    bound = (node_pod(pod) for pod in pods)
    return NodeState(
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        taints=taints,
        allocatable=_amounts((node.get("status") or {}).get("allocatable")),
        pods=tuple(p for p in bound if p is not None),
    )
