"""The alert state machine against Prometheus's rules/alerting.go, one table per behaviour.

Each case is a sequence of evaluations one minute apart. At each step the query either
returns some series (by their ``instance`` label), fails, or answers with warnings; the
expected column is the state of every alert after that step, and the transitions it
produced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from guardian.engine.rules import expansion
from guardian.engine.rules.alerting import (
    COLLISION_ERROR,
    RESOLVED_RETENTION_SECONDS,
    RuleContext,
    evaluate_alerting_rule,
)
from guardian.engine.rules.compiled import CompiledAlertingRule, TemplateEnv
from guardian.engine.templates import QuerySample
from guardian.model.alerts import Alert, AlertState, EvaluationHealth, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule
from guardian_common.errors import TransientError

T0 = 1_700_000_000.0
ERROR = "error"
WARN = "warnings"


@dataclass
class Step:
    present: Sequence[str] | str  # instance names, or ERROR / WARN
    states: Mapping[str, str]  # instance -> expected state (absent = not in the map)
    transitions: Sequence[str] = ()  # "instance:kind"
    health: EvaluationHealth = EvaluationHealth.OK
    values: Mapping[str, float] = field(default_factory=dict)


def _answer(present: Sequence[str] | str, values: Mapping[str, float]) -> QueryResult | Exception:
    if present == ERROR:
        return TransientError("connection refused")
    if present == WARN:
        return QueryResult((), warnings=("partial data",))
    return QueryResult(
        tuple(
            PromSample(LabelSet({"__name__": "m", "instance": i}), values.get(i, 1.0))
            for i in present
        )
    )


def _run(rule: AlertingRule, steps: Sequence[Step], *, limit: int = 0, step_s: float = 60) -> None:
    compiled = CompiledAlertingRule.compile(rule)
    active: dict[LabelSet, Alert] = {}
    for index, step in enumerate(steps):
        ts = T0 + index * step_s
        result = evaluate_alerting_rule(
            compiled,
            active,
            _answer(step.present, step.values),
            ts,
            RuleContext(group="g", limit=limit),
        )
        active = result.active
        got = {a.labels["instance"]: a.state.value for a in active.values()}
        where = f"step {index} (t={index * step_s:.0f}s)"
        assert got == dict(step.states), where
        kinds = [f"{t.labels['instance']}:{t.kind.value}" for t in result.transitions]
        assert kinds == list(step.transitions), where
        assert result.outcome.health is step.health, where


RULE = AlertingRule("A", "m > 0", for_seconds=120)


def test_for_pending_then_firing_and_pending_disappears_at_once() -> None:
    _run(
        RULE,
        [
            Step(["a", "b"], {"a": "pending", "b": "pending"}, ["a:pending", "b:pending"]),
            Step(["a"], {"a": "pending"}, ["b:resolved"]),
            Step(["a"], {"a": "firing"}, ["a:firing"]),  # ts - ActiveAt == for
            Step(["a"], {"a": "firing"}),
        ],
    )


def test_for_zero_fires_on_first_evaluation() -> None:
    _run(AlertingRule("A", "m"), [Step(["a"], {"a": "firing"}, ["a:firing"])])


def test_resolved_alert_is_kept_fifteen_minutes_then_deleted() -> None:
    rule = AlertingRule("A", "m")
    retention_steps = int(RESOLVED_RETENTION_SECONDS // 60)
    steps = [
        Step(["a"], {"a": "firing"}, ["a:firing"]),
        Step([], {"a": "inactive"}, ["a:resolved"]),
    ]
    # ResolvedAt + 15m is still kept (strictly greater deletes), as Prometheus.
    steps += [Step([], {"a": "inactive"}) for _ in range(retention_steps)]
    steps += [Step([], {})]
    _run(rule, steps)


def test_returning_alert_starts_over_as_pending() -> None:
    _run(
        AlertingRule("A", "m", for_seconds=120),
        [
            Step(["a"], {"a": "pending"}, ["a:pending"]),
            Step(["a"], {"a": "pending"}),
            Step(["a"], {"a": "firing"}, ["a:firing"]),
            Step([], {"a": "inactive"}, ["a:resolved"]),
            Step(["a"], {"a": "pending"}, ["a:pending"]),  # new ActiveAt, not re-fired
            Step(["a"], {"a": "pending"}),
            Step(["a"], {"a": "firing"}, ["a:firing"]),
        ],
    )


def test_keep_firing_for() -> None:
    # keep_firing_for 3m: absent at 2m, kept at 2..4m, resolved at 5m (ts - since == 3m).
    rule = AlertingRule("A", "m", keep_firing_for_seconds=180)
    _run(
        rule,
        [
            Step(["a"], {"a": "firing"}, ["a:firing"]),
            Step(["a"], {"a": "firing"}),
            Step([], {"a": "firing"}),
            Step([], {"a": "firing"}),
            Step([], {"a": "firing"}),
            Step([], {"a": "inactive"}, ["a:resolved"]),
        ],
    )


def test_keep_firing_resets_when_condition_returns() -> None:
    rule = AlertingRule("A", "m", keep_firing_for_seconds=120)
    _run(
        rule,
        [
            Step(["a"], {"a": "firing"}, ["a:firing"]),
            Step([], {"a": "firing"}),
            Step(["a"], {"a": "firing"}),
            Step([], {"a": "firing"}),
            Step([], {"a": "firing"}),
            Step([], {"a": "inactive"}, ["a:resolved"]),
        ],
    )


def test_keep_firing_does_not_hold_pending_alerts() -> None:
    rule = AlertingRule("A", "m", for_seconds=300, keep_firing_for_seconds=600)
    _run(rule, [Step(["a"], {"a": "pending"}, ["a:pending"]), Step([], {}, ["a:resolved"])])


@pytest.mark.parametrize("outage", [ERROR, WARN])
def test_failed_or_warned_evaluation_changes_nothing(outage: str) -> None:
    health = EvaluationHealth.FAILED if outage == ERROR else EvaluationHealth.WARNINGS
    _run(
        RULE,
        [
            Step(["a", "b"], {"a": "pending", "b": "pending"}, ["a:pending", "b:pending"]),
            Step(["a", "b"], {"a": "pending", "b": "pending"}),
            Step(["a", "b"], {"a": "firing", "b": "firing"}, ["a:firing", "b:firing"]),
            # b is gone from the data, but the outage must not resolve anything.
            Step(outage, {"a": "firing", "b": "firing"}, health=health),
            Step(outage, {"a": "firing", "b": "firing"}, health=health),
            Step(["a"], {"a": "firing", "b": "inactive"}, ["b:resolved"]),
        ],
    )


def test_outage_does_not_reset_pending_timer() -> None:
    _run(
        RULE,
        [
            Step(["a"], {"a": "pending"}, ["a:pending"]),
            Step(ERROR, {"a": "pending"}, health=EvaluationHealth.FAILED),
            Step(["a"], {"a": "firing"}, ["a:firing"]),
        ],
    )


def test_limit_clears_every_alert_and_fails() -> None:
    rule = AlertingRule("A", "m")
    compiled = CompiledAlertingRule.compile(rule)
    first = evaluate_alerting_rule(
        compiled, {}, _answer(["a"], {}), T0, RuleContext(group="g", limit=2)
    )
    assert len(first.active) == 1

    over = evaluate_alerting_rule(
        compiled,
        first.active,
        _answer(["a", "b", "c"], {}),
        T0 + 60,
        RuleContext(group="g", limit=2),
    )

    assert over.active == {}
    assert over.outcome.health is EvaluationHealth.FAILED
    assert over.outcome.error == "exceeded limit of 2 with 3 alerts"
    assert over.outcome.reason == "limit"
    # The firing alert that was cleared is reported, marked as not actionable.
    assert [(t.kind, t.labels["instance"]) for t in over.transitions] == [
        (TransitionKind.RESOLVED, "a")
    ]
    assert not over.transitions[0].evidence.health.actionable

    within = evaluate_alerting_rule(
        compiled, {}, _answer(["a", "b"], {}), T0 + 120, RuleContext(group="g", limit=2)
    )
    assert within.outcome.health is EvaluationHealth.OK
    assert len(within.active) == 2


def test_limit_counts_kept_firing_alerts() -> None:
    rule = AlertingRule("A", "m", keep_firing_for_seconds=600)
    compiled = CompiledAlertingRule.compile(rule)
    step = evaluate_alerting_rule(
        compiled, {}, _answer(["a"], {}), T0, RuleContext(group="g", limit=1)
    )
    step = evaluate_alerting_rule(
        compiled, step.active, _answer(["b"], {}), T0 + 60, RuleContext(group="g", limit=1)
    )
    assert step.outcome.error == "exceeded limit of 1 with 2 alerts"


def test_collision_fails_and_keeps_state() -> None:
    rule = AlertingRule("A", "m", labels={"instance": "same"})
    compiled = CompiledAlertingRule.compile(rule)
    one = QueryResult((PromSample(LabelSet({"__name__": "m", "job": "x"}), 1.0),))
    first = evaluate_alerting_rule(compiled, {}, one, T0, RuleContext(group="g"))
    two = QueryResult(
        (
            PromSample(LabelSet({"__name__": "m", "job": "x"}), 1.0),
            PromSample(LabelSet({"__name__": "m2", "job": "x"}), 2.0),
        )
    )

    second = evaluate_alerting_rule(compiled, first.active, two, T0 + 60, RuleContext(group="g"))

    assert second.outcome.health is EvaluationHealth.FAILED
    assert second.outcome.error == COLLISION_ERROR
    assert second.active == first.active
    assert second.transitions == []


def test_identity_labels_value_and_annotations_follow_prometheus() -> None:
    rule = AlertingRule(
        "GpuIdle",
        "m",
        labels={"severity": "page", "job": "", "team": "{{ $labels.ns }}"},
        annotations={"summary": "{{ $labels.pod }} is {{ $value }}", "static": "x"},
    )
    compiled = CompiledAlertingRule.compile(rule)
    sample = PromSample(LabelSet({"__name__": "m", "job": "j", "ns": "ml", "pod": "p"}), 1234567.0)

    result = evaluate_alerting_rule(
        compiled,
        {},
        QueryResult((sample,)),
        T0,
        RuleContext("g", env=TemplateEnv({"cluster": "c"})),
    )

    (alert,) = result.active.values()
    # __name__ dropped, empty label removes the sample's own, alertname set.
    assert alert.labels == {
        "alertname": "GpuIdle",
        "ns": "ml",
        "pod": "p",
        "severity": "page",
        "team": "ml",
    }
    assert alert.annotations == {"summary": "p is 1.234567e+06", "static": "x"}
    assert alert.value == 1234567.0
    (transition,) = result.transitions
    assert transition.kind is TransitionKind.FIRING
    assert transition.previous is AlertState.INACTIVE
    assert transition.evidence.health is EvaluationHealth.OK
    assert transition.evidence.query == "m"
    assert transition.fired_at == T0
    assert transition.annotations["summary"] == "p is 1.234567e+06"


def test_value_and_annotations_update_but_active_at_is_kept() -> None:
    rule = AlertingRule("A", "m", for_seconds=600, annotations={"v": "{{ $value }}"})
    compiled = CompiledAlertingRule.compile(rule)
    first = evaluate_alerting_rule(
        compiled, {}, _answer(["a"], {"a": 1}), T0, RuleContext(group="g")
    )
    second = evaluate_alerting_rule(
        compiled, first.active, _answer(["a"], {"a": 2}), T0 + 60, RuleContext(group="g")
    )
    (alert,) = second.active.values()
    assert (alert.active_at, alert.value, alert.annotations["v"]) == (T0, 2.0, "2")


def test_for_is_exact_with_millisecond_slot_offsets() -> None:
    # Real slots carry a sub-second offset (hash % interval): `for` still fires exactly
    # at ActiveAt + for.
    rule = AlertingRule("A", "m", for_seconds=300)
    compiled = CompiledAlertingRule.compile(rule)
    start = 1_700_000_012.345
    active: dict[LabelSet, Alert] = {}
    fired = []
    for k in range(6):
        ts = round((start + k * 60) * 1000) / 1000
        step = evaluate_alerting_rule(
            compiled, active, _answer(["a"], {}), ts, RuleContext(group="g")
        )
        active = step.active
        fired.append(next(iter(active.values())).state.value)
    assert fired == ["pending"] * 5 + ["firing"]


def test_annotations_are_reexpanded_only_when_value_or_external_labels_change() -> None:
    rule = AlertingRule("A", "m", annotations={"v": "{{ $value }} {{ $externalLabels.c }}"})
    compiled = CompiledAlertingRule.compile(rule)
    env = TemplateEnv({"c": "x"})
    active: dict[LabelSet, Alert] = {}
    seen = []
    objects = []
    steps = [(1.0, env), (1.0, env), (2.0, env), (2.0, TemplateEnv({"c": "y"}))]
    for k, (value, step_env) in enumerate(steps):
        step = evaluate_alerting_rule(
            compiled,
            active,
            _answer(["a"], {"a": value}),
            T0 + 60 * k,
            RuleContext(group="g", env=step_env),
        )
        active = step.active
        (alert,) = active.values()
        seen.append(alert.annotations["v"])
        objects.append(alert)
    assert seen == ["1 x", "1 x", "2 x", "2 y"]
    # Unchanged value and env: the same alert object, so the store writes nothing.
    assert objects[1] is objects[0]


def test_query_templates_are_asked_every_time_and_reexpanded_when_an_answer_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expansions: list[float] = []
    real = expansion.expand_sample

    def counted(*args: Any) -> tuple[LabelSet, LabelSet]:
        expansions.append(args[1].value)
        return real(*args)

    monkeypatch.setattr(expansion, "expand_sample", counted)
    rule = AlertingRule(
        "A",
        "m",
        annotations={
            "v": '{{ with query "peak" }}{{ . | first | value }}{{ end }}'
            '{{ with query "bad" }}{{ end }}',
            "w": "{{ $value }}",
        },
    )
    compiled = CompiledAlertingRule.compile(rule)
    answers = [[0.5], [0.5], [0.7], [0.7], [0.7]]
    failing = [False, False, False, True, False]
    asked: list[str] = []
    active: dict[LabelSet, Alert] = {}
    seen = []
    for k, peak in enumerate(answers):

        def query(expr: str, k: int = k, peak: list[float] = peak) -> list[QuerySample]:
            asked.append(expr)
            if expr == "bad" and failing[k]:
                raise TransientError("connection refused")
            return [QuerySample({"g": "x"}, p) for p in peak]

        step = evaluate_alerting_rule(
            compiled, active, _answer(["a"], {}), T0 + 60 * k, RuleContext(group="g", query=query)
        )
        active = step.active
        (alert,) = active.values()
        seen.append(alert.annotations["v"])
    # Expanded at steps 0, 2 (new answer), 3 (a query failed) and 4 (after the failure).
    assert len(expansions) == 4
    # The same answers give the same text; a changed one, or a failed query (its error
    # is in the text), gives a new expansion, and the one after a failure is fresh too.
    assert seen[:3] == ["0.5", "0.5", "0.7"]
    assert "connection refused" in seen[3]
    assert seen[4] == "0.7"
    # Every evaluation asks every query once (none skipped, none asked twice).
    assert asked == ["peak", "bad"] * 5


def test_still_firing_alerts_keep_their_object_and_a_resolved_one_still_resolves() -> None:
    rule = AlertingRule("A", "m")
    compiled = CompiledAlertingRule.compile(rule)
    first = evaluate_alerting_rule(
        compiled, {}, _answer(["a", "b"], {}), T0, RuleContext(group="g")
    )
    second = evaluate_alerting_rule(
        compiled, first.active, _answer(["a"], {}), T0 + 60, RuleContext(group="g")
    )
    a, b = (LabelSet({"alertname": "A", "instance": n}) for n in ("a", "b"))
    assert second.active[a] is first.active[a]
    assert second.active[b].state is AlertState.INACTIVE
    assert [t.kind for t in second.transitions] == [TransitionKind.RESOLVED]
