"""Which policy governs an (alert, workload) pair, and which policies overlap.

Precedence, when several policies match: the highest ``spec.priority`` wins; on a tie
the more specific scope wins (one point each for namespaces, namespaceSelector,
workloadSelector and kinds, and one for alert names); on a further tie the name that
sorts first. ``guardian policies check`` reports every overlapping pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from guardian.model.policies import ReclaimPolicy
from guardian.model.reclaim import FiringAlert, NamespaceState, WorkloadState


def policy_matches(
    policy: ReclaimPolicy,
    alert: FiringAlert,
    workload: WorkloadState,
    namespace: NamespaceState | None,
) -> bool:
    spec = policy.spec
    if not spec.alerts.matches(alert.labels.to_dict()):
        return False
    scope = spec.scope
    if scope.namespaces and workload.ref.namespace not in scope.namespaces:
        return False
    ns_labels = dict(namespace.labels) if namespace is not None else None
    if not scope.namespace_selector.empty and (
        ns_labels is None or not scope.namespace_selector.matches(ns_labels)
    ):
        return False
    if not scope.workload_selector.matches(dict(workload.labels)):
        return False
    return not scope.kinds or workload.ref.kind in scope.kinds


def precedence(policy: ReclaimPolicy) -> tuple[int, int, str]:
    """Sort key: smaller sorts first and wins."""
    spec = policy.spec
    specificity = spec.scope.specificity + bool(spec.alerts.names)
    return (-spec.priority, -specificity, policy.name)


def select_policy(
    policies: Iterable[ReclaimPolicy],
    alerts: Sequence[FiringAlert],
    workload: WorkloadState,
    namespace: NamespaceState | None,
) -> tuple[ReclaimPolicy, list[FiringAlert]] | None:
    """The winning policy for a workload and the alerts it acts on, or None."""
    matched = [
        (policy, [a for a in alerts if policy_matches(policy, a, workload, namespace)])
        for policy in policies
    ]
    candidates = [(p, a) for p, a in matched if a]
    if not candidates:
        return None
    return min(candidates, key=lambda pair: precedence(pair[0]))


@dataclass(frozen=True)
class Overlap:
    winner: ReclaimPolicy
    loser: ReclaimPolicy
    ambiguous: bool  # same priority: decided only by specificity or name
    why: str


def _disjoint(a: Iterable[str], b: Iterable[str]) -> bool:
    left, right = set(a), set(b)
    return bool(left) and bool(right) and not left & right


def _labels_conflict(a: dict[str, str], b: dict[str, str]) -> bool:
    return any(key in b and b[key] != value for key, value in a.items())


def _may_overlap(a: ReclaimPolicy, b: ReclaimPolicy) -> str | None:
    """Why two policies can match the same alert and workload, or None when they cannot.

    Conservative: selectors are compared by their matchLabels only, so two policies whose
    selectors differ only in expressions are reported as overlapping.
    """
    sa, sb = a.spec, b.spec
    if _disjoint(sa.alerts.names, sb.alerts.names):
        return None
    if _labels_conflict(sa.alerts.match_labels, sb.alerts.match_labels):
        return None
    if _disjoint(sa.scope.namespaces, sb.scope.namespaces):
        return None
    if _disjoint(sa.scope.kinds, sb.scope.kinds):
        return None
    for sel_a, sel_b in (
        (sa.scope.namespace_selector, sb.scope.namespace_selector),
        (sa.scope.workload_selector, sb.scope.workload_selector),
    ):
        if _labels_conflict(sel_a.match_labels, sel_b.match_labels):
            return None
    shared = []
    names = _shared(sa.alerts.names, sb.alerts.names)
    shared.append(f"alerts {names}" if names else "alerts (any name)")
    spaces = _shared(sa.scope.namespaces, sb.scope.namespaces)
    shared.append(f"namespaces {spaces}" if spaces else "any namespace")
    kinds = _shared(sa.scope.kinds, sb.scope.kinds)
    if kinds:
        shared.append(f"kinds {kinds}")
    return ", ".join(shared)


def _shared(a: Iterable[str], b: Iterable[str]) -> list[str]:
    """What both sides can match: an empty list on one side means "any"."""
    left, right = set(a), set(b)
    if left and right:
        return sorted(left & right)
    return sorted(left or right)


def find_overlaps(policies: Sequence[ReclaimPolicy]) -> list[Overlap]:
    out: list[Overlap] = []
    ordered = sorted(policies, key=precedence)
    for i, first in enumerate(ordered):
        for second in ordered[i + 1 :]:
            why = _may_overlap(first, second)
            if why is not None:
                ambiguous = first.spec.priority == second.spec.priority
                out.append(Overlap(first, second, ambiguous, why))
    return out
