"""The alert state machine of one alerting rule, exactly as Prometheus's rules/alerting.go.

Pure: the query answer comes in, the new active map, the rule's outcome and the
transitions go out. A failed or unhealthy answer leaves the map untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from guardian.engine.rules.compiled import CompiledAlertingRule, TemplateEnv, TemplateQuery
from guardian.engine.rules.expansion import candidates as expanded
from guardian.engine.rules.expansion import same_value
from guardian.engine.rules.fan_out import FanOut, in_order
from guardian.model.alerts import (
    Alert,
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    RuleOutcome,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.rules import AlertingRule

# Prometheus keeps resolved alerts this long so they are reported as resolved.
RESOLVED_RETENTION_SECONDS = 15 * 60.0
COLLISION_ERROR = "vector contains metrics with the same labelset after applying alert labels"

ActiveMap = Mapping[LabelSet, Alert]


@dataclass(frozen=True)
class RuleStep:
    active: dict[LabelSet, Alert]
    outcome: RuleOutcome
    transitions: list[AlertTransition]


def _ms(seconds: float) -> int:
    """Durations compare in whole milliseconds, as Prometheus's timestamps do, so float
    rounding in slot arithmetic can never move a boundary."""
    return round(seconds * 1000)


def transition(
    kind: TransitionKind, previous: AlertState, alert: Alert, rule: str, group: str, ev: Evidence
) -> AlertTransition:
    """The transition record for ``alert`` of ``rule`` in ``group`` moving from ``previous``."""
    return AlertTransition(
        kind=kind,
        previous=previous,
        group=group,
        rule=rule,
        labels=alert.labels,
        annotations=alert.annotations,
        value=alert.value,
        active_at=alert.active_at,
        at=ev.eval_ts,
        evidence=ev,
        fired_at=alert.fired_at,
        resolved_at=alert.resolved_at,
    )


def _unchanged(
    active: ActiveMap,
    rule: str,
    health: EvaluationHealth,
    error: str | None,
    answer: object,
    reason: str,
) -> RuleStep:
    warnings = answer.warnings if isinstance(answer, QueryResult) else ()
    samples = len(answer.samples) if isinstance(answer, QueryResult) else 0
    outcome = RuleOutcome(
        rule, health, error=error, warnings=warnings, samples=samples, reason=reason
    )
    return RuleStep(dict(active), outcome, [])


@dataclass(frozen=True)
class RuleContext:
    """Where a rule is evaluated: its group, the group's alert limit, the template
    environment and ``query`` function, and how expansions run (``fan_out``)."""

    group: str
    limit: int = 0
    env: TemplateEnv | None = None
    query: TemplateQuery | None = None
    fan_out: FanOut = in_order


@dataclass(frozen=True)
class Timing:
    """A rule's durations in whole milliseconds."""

    for_ms: int
    keep_firing_ms: int

    @classmethod
    def of(cls, rule: AlertingRule) -> Timing:
        return cls(_ms(rule.for_seconds), _ms(rule.keep_firing_for_seconds))


@dataclass(frozen=True)
class Advance:
    """One alert after one evaluation: what the map keeps (None: dropped), the alert as
    the transition shows it, and whether it counts against the group's limit."""

    kept: Alert | None
    shown: Alert
    counts: bool


def _present(alert: Alert, ts: float, timing: Timing) -> Advance:
    """In the answer: pending until it has held for ``for``, then firing."""
    if alert.keep_firing_since is not None:
        alert = replace(alert, keep_firing_since=None)
    if alert.state is AlertState.PENDING and _ms(ts - alert.active_at) >= timing.for_ms:
        alert = replace(alert, state=AlertState.FIRING, fired_at=ts)
    return Advance(alert, alert, True)


def _pending_gone(alert: Alert, ts: float, _timing: Timing) -> Advance:
    """Gone before ``for``: dropped at once, as Prometheus deletes it."""
    return Advance(None, replace(alert, state=AlertState.INACTIVE, resolved_at=ts), False)


def _firing_gone(alert: Alert, ts: float, timing: Timing) -> Advance:
    """Gone while firing: still firing within ``keep_firing_for``, else resolved."""
    since = ts if alert.keep_firing_since is None else alert.keep_firing_since
    if timing.keep_firing_ms > 0 and _ms(ts - since) < timing.keep_firing_ms:
        kept = replace(alert, keep_firing_since=since)
        return Advance(kept, kept, True)
    resolved = replace(alert, state=AlertState.INACTIVE, resolved_at=ts)
    return Advance(resolved, resolved, False)


def _resolved_gone(alert: Alert, ts: float, _timing: Timing) -> Advance:
    """Resolved and still absent: reported as resolved for 15 minutes, then forgotten."""
    over = alert.resolved_at is not None and _ms(ts - alert.resolved_at) > _ms(
        RESOLVED_RETENTION_SECONDS
    )
    return Advance(None if over else alert, alert, False)


# (state, in the answer) -> the step. A resolved alert in the answer never reaches the
# table: a new pending alert replaces it first (evaluate_alerting_rule's merge).
TRANSITIONS: Mapping[tuple[AlertState, bool], Callable[[Alert, float, Timing], Advance]] = {
    (AlertState.PENDING, True): _present,
    (AlertState.FIRING, True): _present,
    (AlertState.INACTIVE, True): _present,
    (AlertState.PENDING, False): _pending_gone,
    (AlertState.FIRING, False): _firing_gone,
    (AlertState.INACTIVE, False): _resolved_gone,
}
_KIND = {
    AlertState.PENDING: TransitionKind.PENDING,
    AlertState.FIRING: TransitionKind.FIRING,
    AlertState.INACTIVE: TransitionKind.RESOLVED,
}


def advance(alert: Alert, present: bool, ts: float, timing: Timing) -> Advance:
    """The pure per-alert step of Prometheus's AlertingRule.Eval, by the table above."""
    return TRANSITIONS[(alert.state, present)](alert, ts, timing)


def _merge(
    active: ActiveMap, candidates: Mapping[LabelSet, tuple[float, LabelSet]], ts: float
) -> dict[LabelSet, Alert]:
    """The answer's alerts over the map: new ones pending since ``ts``; an active one
    with its new value and annotations (a new object only if they changed)."""
    new: dict[LabelSet, Alert] = dict(active)
    for labels, (value, notes) in candidates.items():
        existing = new.get(labels)
        if existing is not None and existing.state is not AlertState.INACTIVE:
            if not same_value(existing.value, value) or (
                existing.annotations is not notes and existing.annotations != notes
            ):
                new[labels] = replace(existing, value=value, annotations=notes)
        else:
            new[labels] = Alert(labels, notes, AlertState.PENDING, active_at=ts, value=value)
    return new


def evaluate_alerting_rule(
    compiled: CompiledAlertingRule,
    active: ActiveMap,
    answer: QueryResult | BaseException,
    ts: float,
    ctx: RuleContext,
) -> RuleStep:
    """One evaluation of ``compiled`` at ``ts`` given the query ``answer`` (or its error)."""
    rule = compiled.rule
    if isinstance(answer, BaseException):
        reason = str(getattr(answer, "reason", "error"))
        return _unchanged(active, rule.name, EvaluationHealth.FAILED, str(answer), answer, reason)
    if answer.warnings or answer.partial:
        health = EvaluationHealth.PARTIAL if answer.partial else EvaluationHealth.WARNINGS
        error = "; ".join(answer.warnings) or "partial response"
        return _unchanged(active, rule.name, health, error, answer, health.value)
    env = ctx.env or TemplateEnv({})
    candidates = expanded(compiled, answer, env, ctx.query, ctx.fan_out)
    if candidates is None:
        return _unchanged(
            active, rule.name, EvaluationHealth.FAILED, COLLISION_ERROR, answer, "collision"
        )
    evidence = Evidence(EvaluationHealth.OK, ts, rule.expr)
    new = _merge(active, candidates, ts)
    transitions: list[AlertTransition] = []
    counted = 0
    timing = Timing.of(rule)
    for labels, alert in list(new.items()):
        present = labels in candidates
        if present and alert.state is AlertState.FIRING and alert.keep_firing_since is None:
            counted += 1  # still firing: nothing to decide (the common case)
            continue
        step = advance(alert, present, ts, timing)
        if step.kept is None:
            del new[labels]
        else:
            new[labels] = step.kept
        counted += step.counts
        before = active.get(labels)
        before_state = before.state if before is not None else AlertState.INACTIVE
        if step.shown.state is not before_state:
            kind = _KIND[step.shown.state]
            transitions.append(
                transition(kind, before_state, step.shown, rule.name, ctx.group, evidence)
            )
    if ctx.limit > 0 and counted > ctx.limit:
        return _over_limit(rule, active, answer, ts, ctx, counted)
    outcome = RuleOutcome(rule.name, EvaluationHealth.OK, samples=len(answer.samples))
    return RuleStep(new, outcome, transitions)


def _over_limit(
    rule: AlertingRule,
    active: ActiveMap,
    answer: QueryResult,
    ts: float,
    ctx: RuleContext,
    count: int,
) -> RuleStep:
    """More alerts than the group's limit: every active one resolved, the rule failed."""
    error = f"exceeded limit of {ctx.limit} with {count} alerts"
    limit_evidence = Evidence(EvaluationHealth.FAILED, ts, rule.expr, error=error)
    cleared = [
        transition(TransitionKind.RESOLVED, a.state, a, rule.name, ctx.group, limit_evidence)
        for a in active.values()
        if a.is_active
    ]
    outcome = RuleOutcome(
        rule.name, EvaluationHealth.FAILED, error=error, samples=len(answer.samples), reason="limit"
    )
    return RuleStep({}, outcome, cleared)
