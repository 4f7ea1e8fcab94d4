"""Which alerts go to Alertmanager and with what, as Prometheus 2.42's notifier sends them
(rules/alerting.go needsSending, sendAlerts; rules/manager.go SendAlerts; notifier.Send)."""

from __future__ import annotations

import pytest

from guardian.app.alertmanager.output import evaluated_expr
from guardian.engine.alertmanager.sending import (
    RuleAlerts,
    SendSettings,
    SentRecord,
    generator_url,
    needs_sending,
    plan_sends,
)
from guardian.engine.rules.group_eval import CompiledGroup, evaluate_group
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.relabel_config import RelabelAction, RelabelConfig
from guardian.model.rules import AlertingRule, RuleGroup

T = 1_700_000_000.0
LABELS = LabelSet({"alertname": "GpuIdle", "pod": "p-1", "cluster": "c1"})
NOTES = LabelSet({"summary": "idle"})


def firing(active_at: float = T - 600, fired_at: float = T - 300, **kw: float) -> Alert:
    return Alert(LABELS, NOTES, AlertState.FIRING, active_at, 0.0, fired_at=fired_at, **kw)


def resolved(at: float) -> Alert:
    return Alert(LABELS, NOTES, AlertState.INACTIVE, T - 600, 0.0, fired_at=T - 300, resolved_at=at)


def sends_over(interval: float, resend: float, steps: int) -> list[float]:
    """The evaluation times (from T) at which a firing alert is sent."""
    alert = firing()
    record: SentRecord | None = None
    out = []
    for i in range(steps):
        ts = T + i * interval
        if needs_sending(alert, record, ts, resend):
            record = SentRecord(alert.active_at, ts)
            out.append(ts - T)
    return out


def test_pending_is_never_sent() -> None:
    pending = Alert(LABELS, NOTES, AlertState.PENDING, T, 0.0)
    assert not needs_sending(pending, None, T, 60)


@pytest.mark.parametrize(
    ("interval", "resend", "expected"),
    [
        (60.0, 60.0, [0.0, 120.0, 240.0]),  # strictly after the delay: every 2 minutes
        (1.0, 2.0, [0.0, 3.0, 6.0]),  # (floor(resend/interval)+1)·interval
        (60.0, 30.0, [0.0, 60.0, 120.0, 180.0, 240.0]),
    ],
)
def test_resend_cadence(interval: float, resend: float, expected: list[float]) -> None:
    steps = int(expected[-1] / interval) + 1
    assert sends_over(interval, resend, steps) == expected


def test_a_resolution_goes_out_at_once_then_with_the_resend_delay() -> None:
    sent = SentRecord(T - 600, T - 10)
    assert needs_sending(resolved(T), sent, T, 60)
    after = SentRecord(T - 600, T)
    assert not needs_sending(resolved(T), after, T + 60, 60)
    assert needs_sending(resolved(T), after, T + 61, 60)


def test_a_new_alert_with_the_same_labels_starts_unsent() -> None:
    record = SentRecord(T - 900, T - 5)  # the earlier, resolved alert object
    assert needs_sending(firing(active_at=T - 60), record, T, 60)


def test_generator_url_escapes_as_gos_query_escape() -> None:
    expr = 'max by (pod) (up{job="a b", x=~".+"}) < 0.05 & 1/2'
    assert generator_url("http://guardian.example:9469/", expr) == (
        "http://guardian.example:9469/graph?g0.expr=max+by+%28pod%29+%28up%7Bjob%3D%22a+b%22"
        "%2C+x%3D~%22.%2B%22%7D%29+%3C+0.05+%26+1%2F2&g0.tab=1"
    )
    assert generator_url("", "up") == "/graph?g0.expr=up&g0.tab=1"


def test_bodies_follow_sendalerts_and_the_notifier() -> None:
    settings = SendSettings(
        resend_delay=60.0,
        external_labels={"cluster": "ext", "replica": "a"},
        relabel=(RelabelConfig(("pod",), target_label="workload"),),
        external_url="http://g",
    )
    rules = [RuleAlerts("GpuIdle{}", "up == 0", {LABELS: firing()})]
    alerts, records = plan_sends(rules, {}, T, 30.0, settings)
    (alert,) = alerts
    assert alert.starts_at == T - 300  # FiredAt, not ActiveAt
    assert alert.ends_at == T + 240  # ValidUntil = ts + 4 * max(interval, resend delay)
    # External labels only where the alert has none of that name; then relabelling.
    assert alert.labels == {**LABELS, "replica": "a", "workload": "p-1"}
    assert alert.annotations == NOTES
    assert alert.generator_url == "http://g/graph?g0.expr=up+%3D%3D+0&g0.tab=1"
    assert records == {("GpuIdle{}", LABELS): SentRecord(T - 600, T)}
    again, _ = plan_sends(rules, records, T + 30, 30.0, settings)
    assert again == []


def test_resolved_alerts_end_at_their_resolution_and_dropped_ones_are_not_sent() -> None:
    rules = [RuleAlerts("r", "up", {LABELS: resolved(T - 1)})]
    (alert,), _ = plan_sends(rules, {}, T, 60.0, SendSettings())
    assert alert.ends_at == T - 1
    drop = SendSettings(relabel=(RelabelConfig(("pod",), regex="p-.*", action=RelabelAction.DROP),))
    alerts, records = plan_sends(rules, {}, T, 60.0, drop)
    assert alerts == []
    assert ("r", LABELS) in records  # decided and "sent", as Prometheus sets LastSentAt


def test_generator_url_uses_the_expression_the_engine_evaluates() -> None:
    rule = AlertingRule("A", 'up{job="x"}   ==   0')
    group = CompiledGroup.compile(RuleGroup("g", "f.yaml", (rule,)), 60.0)
    queried: list[str] = []

    def query(expr: str, ts: float) -> QueryResult:
        queried.append(expr)
        return QueryResult(())

    evaluate_group(group, {}, T, query)
    assert queried == [evaluated_expr(group.rules[0][1])]
