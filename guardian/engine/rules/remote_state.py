"""A rule group's state as a Prometheus or Thanos Ruler reports it (``alerts.source:
prometheus``), turned into the same state and :class:`GroupEvaluation` the engine's own
evaluation gives, so episodes, policies, remediation and Slack work the same.

Pure: the local group (from ``rule_files``, the pack the ruler evaluates), the previous
state and the ruler's answer in; the new state and what happened out. Each local rule is
found in the ruler by group name, rule name and raw labels (file paths differ: the
prometheus-operator writes its own). The same guarantees as our engine's evaluation:

- a rule missing from the ruler, whose ``health`` is not ``ok``, never evaluated, or
  last evaluated more than two group intervals ago is FAILED: its state does not change,
  and remediation waits for its alerts (the group's health blocks every step);
- a ruler that cannot be read fails every rule of the group;
- otherwise the rule's alerts are the ruler's pending and firing alerts, and transitions
  (pending, firing, resolved) are derived against the previous state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from guardian.engine.rules.alerting import transition
from guardian.engine.rules.group_eval import CompiledGroup, GroupState
from guardian.model.alerts import (
    Alert,
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    GroupEvaluation,
    RuleOutcome,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.remote_rules import RemoteGroup, RemoteRule
from guardian.model.rules import AlertingRule

STALE_INTERVALS = 2  # a rule evaluated longer ago than this many intervals is stale


def _match(local: Sequence[AlertingRule], remote: Iterable[RemoteRule]) -> list[RemoteRule | None]:
    """The ruler's rule for each local rule, in order (name and raw labels; a repeated
    rule takes the next one of the same identity)."""
    left = list(remote)
    out: list[RemoteRule | None] = []
    for rule in local:
        found = next(
            (r for r in left if r.name == rule.name and dict(r.labels) == dict(rule.labels)),
            None,
        )
        if found is not None:
            left.remove(found)
        out.append(found)
    return out


def _problem(rule: RemoteRule | None, interval: float, ts: float) -> tuple[str, str] | None:
    """(reason, error) when the ruler's answer for a rule may not be acted on."""
    if rule is None:
        return "missing", "the rule is not loaded in the ruler"
    if rule.health != "ok":
        if rule.health == "unknown" or rule.last_evaluation is None:
            return "not_evaluated", "the ruler has not evaluated the rule yet"
        return "rule_health", f"health {rule.health}: {rule.last_error or 'no error given'}"
    if rule.last_evaluation is None:
        return "not_evaluated", "the ruler has not evaluated the rule yet"
    age = ts - rule.last_evaluation
    if interval > 0 and age > STALE_INTERVALS * interval:
        return "stale", (
            f"last evaluated {age:.0f}s ago, more than {STALE_INTERVALS} intervals of {interval:g}s"
        )
    return None


def _alerts(rule: RemoteRule, previous: Mapping[LabelSet, Alert]) -> dict[LabelSet, Alert]:
    out: dict[LabelSet, Alert] = {}
    for remote in rule.alerts:
        before = previous.get(remote.labels)
        fired_at = None
        if remote.state is AlertState.FIRING:
            kept = before is not None and before.state is AlertState.FIRING
            # The ruler does not report FiredAt: when it was due is the closest we know.
            fired_at = before.fired_at if kept and before else remote.active_at + rule.duration
        out[remote.labels] = Alert(
            remote.labels,
            remote.annotations,
            remote.state,
            active_at=remote.active_at,
            value=remote.value,
            fired_at=fired_at,
        )
    return out


def _transitions(
    old: Mapping[LabelSet, Alert],
    new: Mapping[LabelSet, Alert],
    group: str,
    rule: str,
    evidence: Evidence,
) -> list[AlertTransition]:
    out: list[AlertTransition] = []
    ts = evidence.eval_ts
    for labels, alert in new.items():
        before = old.get(labels)
        previous = before.state if before is not None else AlertState.INACTIVE
        if alert.state is not previous:
            out.append(
                transition(
                    TransitionKind(alert.state.value), previous, alert, rule, group, evidence
                )
            )
    for labels, alert in old.items():
        if labels not in new and alert.is_active:
            gone = replace(alert, state=AlertState.INACTIVE, resolved_at=ts)
            out.append(
                transition(TransitionKind.RESOLVED, alert.state, gone, rule, group, evidence)
            )
    return out


def observe_group(
    compiled: CompiledGroup,
    state: GroupState,
    answer: Sequence[RemoteGroup] | BaseException,
    ts: float,
) -> tuple[dict[str, dict[LabelSet, Alert]], GroupEvaluation]:
    """The group at ``ts`` as the ruler's ``answer`` (or the error reading it) shows it."""
    local = [rule.rule for _key, rule in compiled.rules]
    if isinstance(answer, BaseException):
        remote: list[RemoteRule | None] = [None] * len(local)
        interval = compiled.interval_seconds
        failure: tuple[str, str] | None = (str(getattr(answer, "reason", "error")), str(answer))
    else:
        groups = [g for g in answer if g.name == compiled.name]
        remote = _match(local, (r for g in groups for r in g.rules))
        interval = groups[0].interval if groups else compiled.interval_seconds
        failure = None
    new_state: dict[str, dict[LabelSet, Alert]] = {}
    outcomes: list[RuleOutcome] = []
    transitions: list[AlertTransition] = []
    for (key, _compiled), rule, found in zip(compiled.rules, local, remote, strict=True):
        old = dict(state.get(key, {}))
        problem = failure or _problem(found, interval, ts)
        if problem is not None or found is None:
            reason, error = problem or ("missing", "the rule is not loaded in the ruler")
            new_state[key] = old
            outcomes.append(RuleOutcome(rule.name, EvaluationHealth.FAILED, error, reason=reason))
            continue
        evidence = Evidence(EvaluationHealth.OK, ts, found.query)
        new = _alerts(found, old)
        new_state[key] = new
        outcomes.append(RuleOutcome(rule.name, EvaluationHealth.OK, samples=len(new)))
        transitions.extend(_transitions(old, new, compiled.name, rule.name, evidence))
    evaluation = GroupEvaluation(
        group=compiled.name,
        file=compiled.group.file,
        ts=ts,
        outcomes=tuple(outcomes),
        transitions=tuple(transitions),
    )
    return new_state, evaluation
