"""The delegation rule: a team's namespaced ReclaimPolicy may only narrow a cluster policy.

Under a ClusterReclaimPolicy with ``delegation: allow`` or ``optIn``, a ReclaimPolicy in
namespace N may, for workloads in N only: opt N in (``optIn``), lengthen grace periods
and warm-up, lower limits, add exclusions and active windows, ask for demand or a
checkpoint, or stay in observe. It may never widen scope (other namespaces, kinds or
alerts the cluster policy does not list), shorten a cluster minimum, drop a safety the
cluster policy asks for, or enforce where the cluster policy observes. A policy that
tries is rejected as a whole (its status says which field) and has no effect: the
cluster policy acts as if it were not there.

Both policies' exclusions and active windows apply; the team's policy's other settings
govern. Precedence between cluster policies is unchanged (matching.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from guardian.engine.remediation.inherit import Effective, inherited
from guardian.engine.remediation.matching import select_policy
from guardian.model.policies import (
    Delegation,
    HpaPolicy,
    Mode,
    OnTimeout,
    PartialAction,
    PolicySpec,
    ReclaimPolicy,
    ReclaimWhen,
)
from guardian.model.reclaim import FiringAlert, NamespaceState, WorkloadState
from guardian_common.durations import format_duration

Violation = tuple[str, str]  # (field path, why)
NOTHING_ENFORCED = "nothing is enforced: delegation optIn and no team policy opts in"


def _subset(child: Sequence[str], parent: Sequence[str], field: str, what: str) -> list[Violation]:
    """An empty list means "any": a child may narrow it, never widen a listed parent."""
    if not parent:
        return []
    if not child:
        return [(field, f"any {what} widens the cluster policy's {sorted(parent)}")]
    extra = sorted(set(child) - set(parent))
    return (
        [(field, f"{what} {extra} not in the cluster policy's {sorted(parent)}")] if extra else []
    )


def _scope(child: ReclaimPolicy, parent: ReclaimPolicy) -> list[Violation]:
    c, p = child.spec, parent.spec
    found: list[Violation] = []
    others = sorted(set(c.scope.namespaces) - {child.namespace or ""})
    if others:
        found.append(("spec.scope.namespaces", f"acts only in its own namespace, not in {others}"))
    found += _subset(c.scope.kinds, p.scope.kinds, "spec.scope.kinds", "kinds")
    found += _subset(c.alerts.names, p.alerts.names, "spec.alerts.names", "alerts")
    return found


def _minimums(child: ReclaimPolicy, parent: ReclaimPolicy) -> list[Violation]:
    c, p = child.spec, parent.spec
    pairs = [
        ("spec.ladder.gracePeriod", c.ladder.grace_period, p.ladder.grace_period),
        ("spec.warmup", c.warmup, p.warmup),
        ("spec.reclaim.pendingFor", c.reclaim.pending_for, p.reclaim.pending_for),
    ]
    if p.checkpoint.enabled:
        pairs.append(("spec.checkpoint.timeout", c.checkpoint.timeout, p.checkpoint.timeout))
    shorter = "is shorter than the cluster minimum"
    found = [
        (field, f"{format_duration(mine)} {shorter} {format_duration(theirs)}")
        for field, mine, theirs in pairs
        if mine < theirs
    ]
    for field, mine, theirs in (
        ("spec.limits.perCycle", c.limits.per_cycle, p.limits.per_cycle),
        (
            "spec.limits.perNamespacePerHour",
            c.limits.per_namespace_per_hour,
            p.limits.per_namespace_per_hour,
        ),
    ):
        if mine > theirs:
            found.append((field, f"{mine} is more than the cluster maximum {theirs}"))
    return found


def _safeties(child: ReclaimPolicy, parent: ReclaimPolicy) -> list[Violation]:
    c, p = child.spec, parent.spec
    checks = (
        (
            "spec.mode",
            c.mode is Mode.ENFORCE and p.mode is Mode.OBSERVE,
            "enforce where the cluster policy observes",
        ),
        (
            "spec.ladder.reclaim",
            c.ladder.reclaim and not p.ladder.reclaim,
            "the cluster policy does not reclaim",
        ),
        (
            "spec.ladder.annotate",
            p.ladder.annotate and not c.ladder.annotate,
            "the cluster policy annotates first",
        ),
        (
            "spec.allowPodDeletion",
            c.allow_pod_deletion and not p.allow_pod_deletion,
            "the cluster policy does not delete pods",
        ),
        (
            "spec.hpa",
            c.hpa is HpaPolicy.RECORD and p.hpa is HpaPolicy.REFUSE,
            "the cluster policy refuses HPAs",
        ),
        (
            "spec.respectSilences",
            p.respect_silences and not c.respect_silences,
            "the cluster policy respects silences",
        ),
        (
            "spec.notifyOutsideWindows",
            c.notify_outside_windows and not p.notify_outside_windows,
            "the cluster policy does not notify outside its windows",
        ),
    )
    return [(field, f"not allowed: {why}") for field, bad, why in checks if bad] + _before_reclaim(
        c, p
    )


def _before_reclaim(c: PolicySpec, p: PolicySpec) -> list[Violation]:
    """What a team's policy may not drop of what its cluster policy asks before a reclaim."""
    checks = (
        (
            "spec.reclaim.when",
            c.reclaim.when is ReclaimWhen.ALWAYS and p.reclaim.when is ReclaimWhen.DEMAND,
            "the cluster policy reclaims only on demand",
        ),
        (
            "spec.checkpoint.enabled",
            p.checkpoint.enabled and not c.checkpoint.enabled,
            "the cluster policy asks for a checkpoint first",
        ),
        (
            "spec.checkpoint.onTimeout",
            p.checkpoint.enabled
            and p.checkpoint.on_timeout is OnTimeout.GIVE_UP
            and c.checkpoint.on_timeout is OnTimeout.RECLAIM,
            "the cluster policy gives up when no checkpoint comes",
        ),
        (
            "spec.partial",
            c.partial is PartialAction.RIGHT_SIZE and p.partial is PartialAction.NOTIFY,
            "the cluster policy never acts on partly idle workloads",
        ),
    )
    return [(field, f"not allowed: {why}") for field, bad, why in checks if bad]


def judge(child: ReclaimPolicy, parent: ReclaimPolicy) -> tuple[Effective, list[Violation]]:
    """``child`` (a team's policy) with what it inherits from ``parent`` (a cluster
    policy), and how that would widen ``parent``; no violation: it only narrows it."""
    found = inherited(child, parent)
    if parent.spec.delegation is Delegation.NONE:
        why = f"ClusterReclaimPolicy {parent.name} does not delegate (delegation: none)"
        return found, [("", why)]
    if found.problems:
        return found, list(found.problems)
    c = found.policy
    return found, _scope(c, parent) + _minimums(c, parent) + _safeties(c, parent)


def violations(child: ReclaimPolicy, parent: ReclaimPolicy) -> list[Violation]:
    """How ``child``'s effective policy would widen ``parent``; empty: it only narrows it."""
    return judge(child, parent)[1]


def delegating_parents(
    child: ReclaimPolicy, cluster_policies: Iterable[ReclaimPolicy]
) -> list[ReclaimPolicy]:
    """The cluster policies that delegate and may cover the child's namespace (by
    ``scope.namespaces``; a namespaceSelector is decided per workload)."""
    ns = child.namespace or ""
    return [
        p
        for p in cluster_policies
        if p.spec.delegation is not Delegation.NONE
        and (not p.spec.scope.namespaces or ns in p.spec.scope.namespaces)
    ]


def review(child: ReclaimPolicy, cluster_policies: Iterable[ReclaimPolicy]) -> list[Violation]:
    """Why a team's policy is rejected (its status), checked against every cluster policy
    that could delegate to it; empty: accepted."""
    parents = delegating_parents(child, cluster_policies)
    if not parents:
        return [
            (
                "metadata.namespace",
                f"no ClusterReclaimPolicy delegates to namespace {child.namespace}",
            )
        ]
    found: list[Violation] = []
    for parent in sorted(parents, key=lambda p: p.name):
        found += [
            (f, f"{why} (ClusterReclaimPolicy {parent.name})")
            for f, why in violations(child, parent)
        ]
    return found


def opt_in_gap(parent: ReclaimPolicy, policies: Iterable[ReclaimPolicy]) -> str | None:
    """Why a cluster policy with ``delegation: optIn`` enforces nothing (no team's
    policy it delegates to is valid), or None."""
    if parent.namespace is not None or parent.spec.delegation is not Delegation.OPT_IN:
        return None
    teams = [p for p in policies if p.namespace is not None and delegating_parents(p, [parent])]
    rejected = sorted(p.name for p in teams if violations(p, parent))
    if len(rejected) < len(teams):
        return None
    return NOTHING_ENFORCED + (f" (rejected: {', '.join(rejected)})" if rejected else "")


def enforcing(policies: Sequence[ReclaimPolicy]) -> set[str]:
    """The names of the policies that enforce as they act: a team's with the mode it
    inherits from any cluster policy it validly narrows."""
    cluster = [p for p in policies if p.namespace is None]
    found = {p.name for p in cluster if p.spec.mode is Mode.ENFORCE}
    for child in (p for p in policies if p.namespace is not None):
        for parent in delegating_parents(child, cluster):
            acts, wrong = judge(child, parent)
            if not wrong and acts.policy.spec.mode is Mode.ENFORCE:
                found.add(child.name)
    return found


@dataclass(frozen=True)
class Governing:
    """The policy that acts on a workload (a team's: its effective policy, with what it
    inherits), the cluster policy it narrows (None: it is a cluster policy), and the
    alerts both match."""

    policy: ReclaimPolicy
    parent: ReclaimPolicy | None
    alerts: list[FiringAlert]


def governing(
    policies: Sequence[ReclaimPolicy],
    alerts: Sequence[FiringAlert],
    workload: WorkloadState,
    namespace: NamespaceState | None,
) -> Governing | str | None:
    """Who governs ``workload``: a Governing, a reason no policy may (str), or None when
    no policy matches. Team policies count only in their own namespace."""
    cluster = [p for p in policies if p.namespace is None]
    chosen = select_policy(cluster, alerts, workload, namespace)
    if chosen is None:
        return None
    parent, matched = chosen
    if parent.spec.delegation is Delegation.NONE:
        return Governing(parent, None, matched)
    judged = [judge(p, parent) for p in policies if p.namespace == workload.ref.namespace]
    teams = [found.policy for found, wrong in judged if not wrong]
    team = select_policy(teams, matched, workload, namespace)
    if team is not None:
        return Governing(team[0], parent, team[1])
    if parent.spec.delegation is Delegation.OPT_IN:
        return (
            f"policy {parent.name} acts only where a team opts in, and no valid ReclaimPolicy "
            f"in namespace {workload.ref.namespace} matches"
        )
    return Governing(parent, None, matched)
