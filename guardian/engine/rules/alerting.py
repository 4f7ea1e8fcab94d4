"""The alert state machine of one alerting rule, exactly as Prometheus's rules/alerting.go.

Pure: the query answer comes in, the new active map, the rule's outcome and the
transitions go out. A failed or unhealthy answer leaves the map untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def _transition(
    kind: TransitionKind, previous: AlertState, alert: Alert, rule: str, group: str, ev: Evidence
) -> AlertTransition:
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


def evaluate_alerting_rule(
    compiled: CompiledAlertingRule,
    active: ActiveMap,
    answer: QueryResult | BaseException,
    ts: float,
    *,
    group: str,
    limit: int = 0,
    env: TemplateEnv | None = None,
    query: TemplateQuery | None = None,
    fan_out: FanOut = in_order,
) -> RuleStep:
    """One evaluation of ``compiled`` at ``ts`` given the query ``answer`` (or its error).
    ``fan_out`` runs the expansions of a rule whose templates call ``query``."""
    rule = compiled.rule
    if isinstance(answer, BaseException):
        reason = str(getattr(answer, "reason", "error"))
        return _unchanged(active, rule.name, EvaluationHealth.FAILED, str(answer), answer, reason)
    if answer.warnings or answer.partial:
        health = EvaluationHealth.PARTIAL if answer.partial else EvaluationHealth.WARNINGS
        error = "; ".join(answer.warnings) or "partial response"
        return _unchanged(active, rule.name, health, error, answer, health.value)
    candidates = expanded(compiled, answer, env or TemplateEnv({}), query, fan_out)
    if candidates is None:
        return _unchanged(
            active, rule.name, EvaluationHealth.FAILED, COLLISION_ERROR, answer, "collision"
        )

    evidence = Evidence(EvaluationHealth.OK, ts, rule.expr)
    new: dict[LabelSet, Alert] = dict(active)
    for labels, (value, notes) in candidates.items():
        existing = new.get(labels)
        if existing is not None and existing.state is not AlertState.INACTIVE:
            if not same_value(existing.value, value) or (
                existing.annotations is not notes and existing.annotations != notes
            ):
                # Only a changed alert becomes a new object: the store writes just those.
                new[labels] = replace(existing, value=value, annotations=notes)
        else:
            new[labels] = Alert(labels, notes, AlertState.PENDING, active_at=ts, value=value)

    transitions: list[AlertTransition] = []
    active_pending = 0
    for_ms = _ms(rule.for_seconds)
    for labels, alert in list(new.items()):
        firing = alert.state is AlertState.FIRING and alert.keep_firing_since is None
        if firing and labels in candidates:  # still firing: nothing to decide (the common case)
            active_pending += 1
            continue
        before = active.get(labels)
        before_state = before.state if before is not None else AlertState.INACTIVE
        if labels not in candidates:
            keep_firing = False
            if alert.state is AlertState.FIRING and rule.keep_firing_for_seconds > 0:
                since = alert.keep_firing_since
                if since is None:
                    since = ts
                    alert = replace(alert, keep_firing_since=since)
                keep_firing = _ms(ts - since) < _ms(rule.keep_firing_for_seconds)
            retention_over = alert.resolved_at is not None and _ms(ts - alert.resolved_at) > _ms(
                RESOLVED_RETENTION_SECONDS
            )
            if alert.state is AlertState.PENDING or retention_over:
                del new[labels]
                if alert.state is AlertState.PENDING:
                    gone = replace(alert, state=AlertState.INACTIVE, resolved_at=ts)
                    transitions.append(
                        _transition(
                            TransitionKind.RESOLVED,
                            AlertState.PENDING,
                            gone,
                            rule.name,
                            group,
                            evidence,
                        )
                    )
                continue
            if alert.state is not AlertState.INACTIVE and not keep_firing:
                resolved = replace(alert, state=AlertState.INACTIVE, resolved_at=ts)
                new[labels] = resolved
                transitions.append(
                    _transition(
                        TransitionKind.RESOLVED, alert.state, resolved, rule.name, group, evidence
                    )
                )
                continue
            if not keep_firing:
                new[labels] = alert
                continue
        elif alert.keep_firing_since is not None:
            alert = replace(alert, keep_firing_since=None)
        active_pending += 1
        if alert.state is AlertState.PENDING and _ms(ts - alert.active_at) >= for_ms:
            alert = replace(alert, state=AlertState.FIRING, fired_at=ts)
        new[labels] = alert
        if alert.state is not before_state:
            kind = TransitionKind(alert.state.value)
            transitions.append(_transition(kind, before_state, alert, rule.name, group, evidence))

    if limit > 0 and active_pending > limit:
        error = f"exceeded limit of {limit} with {active_pending} alerts"
        limit_evidence = Evidence(EvaluationHealth.FAILED, ts, rule.expr, error=error)
        cleared = [
            _transition(TransitionKind.RESOLVED, a.state, a, rule.name, group, limit_evidence)
            for a in active.values()
            if a.is_active
        ]
        outcome = RuleOutcome(
            rule.name,
            EvaluationHealth.FAILED,
            error=error,
            samples=len(answer.samples),
            reason="limit",
        )
        return RuleStep({}, outcome, cleared)
    outcome = RuleOutcome(rule.name, EvaluationHealth.OK, samples=len(answer.samples))
    return RuleStep(new, outcome, transitions)
