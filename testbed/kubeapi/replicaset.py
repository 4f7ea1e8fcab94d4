"""What the ReplicaSet controller deletes on a scale-down, for the fake API's users.

The fake runs no controllers; a test that scales a ReplicaSet down calls
:func:`scale_down` to play the controller's part. The order mirrors Kubernetes'
``ActivePodsWithRanks.Less`` (pkg/controller/controller_utils.go), the criteria in
precedence: unassigned before assigned; Pending, then Unknown, then Running; not Ready
before Ready; lower ``controller.kubernetes.io/pod-deletion-cost`` first; more pods of
the ReplicaSet on the same node first; Ready for a shorter time first (approximated by
creation here: the fake keeps no transition times); more container restarts first;
newer before older.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from testbed.kubeapi.server import FakeKubeAPI

_PHASE = {"Pending": 0, "Unknown": 1, "Running": 2}
COST = "controller.kubernetes.io/pod-deletion-cost"


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _cost(pod: Mapping[str, Any]) -> int:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(COST, "0")
    try:
        return int(text)
    except ValueError:
        return 0


def _restarts(pod: Mapping[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def deletion_order(pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """The pods' names, the first to be deleted first."""
    per_node = Counter(str((p.get("spec") or {}).get("nodeName") or "") for p in pods)

    def key(pod: Mapping[str, Any]) -> tuple[Any, ...]:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        node = str(spec.get("nodeName") or "")
        created = str(meta.get("creationTimestamp", ""))
        return (
            bool(node),
            _PHASE.get(str((pod.get("status") or {}).get("phase")), 0),
            _ready(pod),
            _cost(pod),
            -per_node[node] if node else 0,
            _invert(created),  # Ready for a shorter time (newer) first
            -_restarts(pod),
            _invert(created),
        )

    return [str(p["metadata"]["name"]) for p in sorted(pods, key=key)]


def _invert(text: str) -> tuple[int, ...]:
    """Sorts RFC 3339 times newest first."""
    return tuple(-ord(c) for c in text)


def scale_down(kube: FakeKubeAPI, namespace: str, owner: str, replicas: int) -> list[str]:
    """Delete the pods of ReplicaSet ``owner`` beyond ``replicas``, as its controller
    would; returns their names."""
    pods = [
        p
        for p in kube.objects("Pod", namespace)
        if any(o.get("name") == owner for o in p["metadata"].get("ownerReferences") or ())
        and not p["metadata"].get("deletionTimestamp")
    ]
    excess = deletion_order(pods)[: max(0, len(pods) - replicas)]
    for name in excess:
        kube.delete("Pod", name, namespace)
    return excess
