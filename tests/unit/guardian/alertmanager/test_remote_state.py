"""alerts.source: prometheus: a ruler's /api/v1/rules turned into the engine's state and
evaluation, with the same guarantees (missing, unhealthy, stale or unreadable: no change,
FAILED health)."""

from __future__ import annotations

import pytest

from guardian.adapters.prometheus_rules import RulesUnavailable
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.remote_state import observe_group
from guardian.model.alerts import Alert, AlertState, EvaluationHealth, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.remote_rules import RemoteAlert, RemoteGroup, RemoteRule
from guardian.model.rules import AlertingRule, RuleGroup

T = 1_700_000_000.0
IDLE = AlertingRule("GpuIdle", "x", 300.0, labels={"severity": "warning"})
DOWN_A = AlertingRule("GpuExporterDown", "y", 300.0, labels={"reason": "a"})
DOWN_B = AlertingRule("GpuExporterDown", "z", 300.0, labels={"reason": "b"})
GROUP = CompiledGroup.compile(RuleGroup("idle", "rules/idle.yaml", (IDLE, DOWN_A, DOWN_B)), 60.0)
KEYS = [key for key, _ in GROUP.rules]
POD = LabelSet({"alertname": "GpuIdle", "pod": "p-1", "severity": "warning"})


def remote(rule: AlertingRule, *alerts: RemoteAlert, **kw: object) -> RemoteRule:
    values: dict[str, object] = {"health": "ok", "last_evaluation": T - 10, **kw}
    return RemoteRule(
        rule.name,
        f"printed({rule.expr})",
        rule.for_seconds,
        dict(rule.labels),
        alerts=alerts,
        **values,  # type: ignore[arg-type]
    )


def ruler(
    *rules: RemoteRule, name: str = "idle", interval: float = 60.0
) -> tuple[RemoteGroup, ...]:
    return (RemoteGroup(name, "/etc/prometheus/rules/ns-x.yaml", interval, rules),)


def firing(labels: LabelSet = POD, active_at: float = T - 900) -> RemoteAlert:
    return RemoteAlert(labels, LabelSet({"summary": "s"}), AlertState.FIRING, active_at, 0.0)


def healthy(at: float, *idle_alerts: RemoteAlert) -> tuple[RemoteGroup, ...]:
    """The ruler's answer read at ``at``: every rule evaluated 10s before."""
    return ruler(
        remote(IDLE, *idle_alerts, last_evaluation=at - 10),
        remote(DOWN_A, last_evaluation=at - 10),
        remote(DOWN_B, last_evaluation=at - 10),
    )


def test_alerts_and_transitions_from_the_ruler() -> None:
    state, evaluation = observe_group(GROUP, {}, healthy(T, firing()), T)
    alert = state[KEYS[0]][POD]
    assert alert.state is AlertState.FIRING
    assert alert.active_at == T - 900
    assert alert.fired_at == T - 600  # when it was due: activeAt + for
    assert [o.health for o in evaluation.outcomes] == [EvaluationHealth.OK] * 3
    (transition,) = evaluation.transitions
    assert transition.kind is TransitionKind.FIRING
    assert transition.evidence.query == "printed(x)"
    assert evaluation.file == "rules/idle.yaml"

    # The next read: nothing changed, no transition; FiredAt kept.
    again, evaluation = observe_group(GROUP, state, healthy(T + 60, firing()), T + 60)
    assert evaluation.transitions == ()
    assert again[KEYS[0]][POD].fired_at == T - 600

    # Gone from the ruler: resolved.
    gone, evaluation = observe_group(GROUP, again, healthy(T + 120), T + 120)
    assert gone[KEYS[0]] == {}
    (transition,) = evaluation.transitions
    assert transition.kind is TransitionKind.RESOLVED
    assert transition.resolved_at == T + 120


def test_pending_then_firing() -> None:
    pending = RemoteAlert(POD, LabelSet(), AlertState.PENDING, T - 60, 0.0)
    state, evaluation = observe_group(GROUP, {}, healthy(T, pending), T)
    assert evaluation.transitions[0].kind is TransitionKind.PENDING
    _, evaluation = observe_group(GROUP, state, healthy(T + 300, firing(active_at=T - 60)), T + 300)
    assert evaluation.transitions[0].kind is TransitionKind.FIRING
    assert evaluation.transitions[0].previous is AlertState.PENDING


PREVIOUS = {KEYS[0]: {POD: Alert(POD, LabelSet(), AlertState.FIRING, T - 900, 0.0, T - 600)}}


@pytest.mark.parametrize(
    ("answer", "reason", "error"),
    [
        (
            ruler(
                remote(IDLE, health="err", last_error="vector cannot contain metrics"),
                remote(DOWN_A),
                remote(DOWN_B),
            ),
            "rule_health",
            "health err: vector cannot contain metrics",
        ),
        (ruler(remote(DOWN_A), remote(DOWN_B)), "missing", "the rule is not loaded in the ruler"),
        (
            ruler(remote(IDLE, last_evaluation=T - 121), remote(DOWN_A), remote(DOWN_B)),
            "stale",
            "last evaluated 121s ago, more than 2 intervals of 60s",
        ),
        (
            ruler(
                remote(IDLE, health="unknown", last_evaluation=None), remote(DOWN_A), remote(DOWN_B)
            ),
            "not_evaluated",
            "the ruler has not evaluated the rule yet",
        ),
    ],
)
def test_a_rule_that_cannot_be_trusted_fails_and_keeps_its_state(
    answer: tuple[RemoteGroup, ...], reason: str, error: str
) -> None:
    state, evaluation = observe_group(GROUP, PREVIOUS, answer, T)
    assert state[KEYS[0]] == PREVIOUS[KEYS[0]]  # no resolution, no change
    bad = evaluation.outcomes[0]
    assert bad.health is EvaluationHealth.FAILED
    assert bad.reason == reason
    assert bad.error == error
    assert not evaluation.healthy
    assert evaluation.transitions == ()


def test_a_stale_rule_is_judged_by_the_rulers_interval() -> None:
    answer = ruler(
        remote(IDLE, last_evaluation=T - 121), remote(DOWN_A), remote(DOWN_B), interval=120
    )
    _, evaluation = observe_group(GROUP, {}, answer, T)
    assert evaluation.healthy


def test_an_unreadable_ruler_fails_every_rule() -> None:
    state, evaluation = observe_group(GROUP, PREVIOUS, RulesUnavailable("refused"), T)
    assert state[KEYS[0]] == PREVIOUS[KEYS[0]]
    assert {o.reason for o in evaluation.outcomes} == {"connection"}
    assert {o.error for o in evaluation.outcomes} == {"refused"}


def test_rules_with_one_name_are_told_apart_by_their_labels() -> None:
    down = LabelSet({"alertname": "GpuExporterDown", "reason": "b", "node": "n1"})
    answer = ruler(remote(DOWN_B, firing(down)), remote(IDLE), remote(DOWN_A, health="err"))
    state, evaluation = observe_group(GROUP, {}, answer, T)
    assert state[KEYS[2]] == {down: state[KEYS[2]][down]}
    assert [o.health for o in evaluation.outcomes] == [
        EvaluationHealth.OK,
        EvaluationHealth.FAILED,
        EvaluationHealth.OK,
    ]


def test_another_group_of_the_same_rules_is_not_ours() -> None:
    _, evaluation = observe_group(GROUP, {}, ruler(remote(IDLE), name="other"), T)
    assert {o.reason for o in evaluation.outcomes} == {"missing"}
