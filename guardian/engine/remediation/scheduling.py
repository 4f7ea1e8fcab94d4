"""Four of kube-scheduler's filter plugins, for one pending pod and one node.

Each filter answers None (the pod passes) or why it does not, and mirrors the upstream
plugin it is named after (pkg/scheduler/framework/plugins):

- ``node_name`` (NodeName): ``spec.nodeName`` empty or this node's name.
- ``node_affinity`` (NodeAffinity): every ``nodeSelector`` label equal, and, when the pod
  has required node affinity, one of its ``nodeSelectorTerms`` matching (terms ORed;
  within a term every ``matchExpressions`` and ``matchFields`` entry ANDed; an empty term,
  an empty list of terms or a malformed requirement matches nothing).
- ``taint_toleration`` (TaintToleration): every ``NoSchedule`` and ``NoExecute`` taint
  tolerated (``PreferNoSchedule`` is a preference, not a filter).
- ``resources_fit`` (NodeResourcesFit): one more pod within ``pods``, and each resource
  the pod requests within allocatable minus what the other pods on the node request.

Nothing else is compared: see engine/remediation/demand.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from guardian.engine.remediation.quantity import show
from guardian.model.reclaim import (
    NodeSelectorTerm,
    NodeState,
    PendingPod,
    Requirement,
    Taint,
    Toleration,
)

FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
_INT = re.compile(r"[+-]?[0-9]+")


def node_name(pod: PendingPod, node: NodeState) -> str | None:
    if not pod.node or pod.node == node.name:
        return None
    return f"bound to node {pod.node}"


def _integer(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and digits, nothing else."""
    if _INT.fullmatch(text) is None:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def expression_matches(req: Requirement, labels: Mapping[str, str]) -> bool | None:
    """A ``matchExpressions`` entry on node labels; None when it is malformed."""
    op, values, present = req.operator, req.values, req.key in labels
    if op in ("In", "NotIn"):
        if not values:
            return None
        inside = present and labels[req.key] in values
        return inside if op == "In" else not inside
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return present if op == "Exists" else not present
    if op in ("Gt", "Lt"):
        bound = _integer(values[0]) if len(values) == 1 else None
        if bound is None:
            return None
        have = _integer(labels[req.key]) if present else None
        if have is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return None


def field_matches(req: Requirement, node: NodeState) -> bool | None:
    """A ``matchFields`` entry: In or NotIn with one value, on ``metadata.name``."""
    if req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return None
    fields = {"metadata.name": node.name}
    equal = fields.get(req.key, "") == req.values[0]
    return equal if req.operator == "In" else not equal


def term_matches(term: NodeSelectorTerm, node: NodeState) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    results = [expression_matches(r, node.labels) for r in term.match_expressions]
    results += [field_matches(r, node) for r in term.match_fields]
    return all(result is True for result in results)


def _requirement(req: Requirement) -> str:
    values = f" ({', '.join(req.values)})" if req.values else ""
    return f"{req.key} {req.operator}{values}"


def node_affinity(pod: PendingPod, node: NodeState) -> str | None:
    for key, value in sorted(pod.node_selector.items()):
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    terms = pod.affinity
    if terms is None or any(term_matches(term, node) for term in terms):
        return None
    if len(terms) == 1:
        reqs = (*terms[0].match_expressions, *terms[0].match_fields)
        return f"required node affinity: {'; '.join(map(_requirement, reqs)) or 'empty term'}"
    if not terms:
        return "required node affinity without terms"
    return f"required node affinity: none of its {len(terms)} terms matches"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def taint_text(taint: Taint) -> str:
    return f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"


def taint_toleration(pod: PendingPod, node: NodeState) -> str | None:
    for taint in node.taints:
        if taint.effect not in FILTERED_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in pod.tolerations):
            return f"untolerated taint {taint_text(taint)}"
    return None


def resources_fit(
    pod: PendingPod, node: NodeState, gone: Collection[tuple[str, str]] = ()
) -> str | None:
    """Fit once the pods named in ``gone`` (namespace, name) have left the node; the pod
    itself is never counted against itself."""
    own = (pod.namespace, pod.name)
    others = [
        p for p in node.pods if (p.namespace, p.name) not in gone and (p.namespace, p.name) != own
    ]
    allowed = node.allocatable.get("pods", 0)
    if len(others) + 1 > allowed:
        return f"too many pods ({len(others)} of {allowed} stay)"
    short: list[str] = []
    for resource, asked in sorted(pod.asks().items()):
        if asked <= 0:
            continue
        used = sum(p.requests.get(resource, 0) for p in others)
        free = node.allocatable.get(resource, 0) - used
        if asked > free:
            short.append(
                f"{resource} {show(resource, asked)} > {show(resource, max(free, 0))} free"
            )
    return f"insufficient {', '.join(short)}" if short else None


def fits(pod: PendingPod, node: NodeState, gone: Collection[tuple[str, str]] = ()) -> str | None:
    """None when ``pod`` passes all four filters on ``node`` once ``gone`` left it; else
    the first reason, in the scheduler's order."""
    return (
        node_name(pod, node)
        or taint_toleration(pod, node)
        or node_affinity(pod, node)
        or resources_fit(pod, node, gone)
    )
