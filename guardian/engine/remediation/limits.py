"""The limits on reclaims (the disruptive step) and the kinds that cannot be stopped:
counted over one plan, per policy, per namespace and per hour from the ledger."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from guardian.engine.remediation.candidate import Candidate
from guardian.model.policies import HpaPolicy
from guardian.model.reclaim import ActionKind, LedgerView


@dataclass
class Counts:
    """Reclaims planned so far in one plan (blast-radius limits)."""

    reclaims: int = 0
    per_policy: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    per_namespace: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))


def reclaim_refusal(
    c: Candidate, counts: Counts, ledger: LedgerView, max_per_cycle: int, now: float
) -> str | None:
    """Why the reclaim of ``c`` may not happen now: the kind cannot be stopped, it is
    already stopped, or a limit is reached (over the policy, the namespace, the cycle)."""
    ws, spec, name = c.ws, c.policy.spec, c.policy.name
    if ws.action is ActionKind.NONE:
        return f"{ws.ref.kind} has no replica count we can set: annotate and notify only"
    if ws.action is ActionKind.POD and not spec.allow_pod_deletion:
        return "a bare pod is only annotated and notified (policy does not allow deletion)"
    if ws.hpa is not None and spec.hpa is HpaPolicy.REFUSE:
        return f"HorizontalPodAutoscaler {ws.hpa.name} scales it; the policy refuses (hpa: refuse)"
    if ws.action in (ActionKind.SCALE, ActionKind.SCALE_SUBRESOURCE) and ws.replicas == 0:
        return "already at 0 replicas (someone else scaled it down)"
    if ws.action is ActionKind.SUSPEND and ws.suspended:
        return "already suspended"
    if ws.action is ActionKind.NOTEBOOK and ws.suspended:
        return "notebook already stopped"
    if counts.reclaims >= max_per_cycle:
        return f"limit: {max_per_cycle} reclaims per cycle reached"
    if counts.per_policy[name] >= spec.limits.per_cycle:
        return f"limit: policy {name} allows {spec.limits.per_cycle} reclaims per cycle"
    ns = ws.ref.namespace
    recent = ledger.reclaims_since(ns, now - 3600.0, real=not c.dry_run)
    if recent + counts.per_namespace[ns] >= spec.limits.per_namespace_per_hour:
        return f"limit: {spec.limits.per_namespace_per_hour} reclaims per hour in namespace {ns}"
    return None
