"""Outages change nothing, and a restart continues `for` timers from the durable state."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.local_prometheus import free_loopback_port
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.model.alerts import EvaluationHealth, GroupEvaluation, TransitionKind
from guardian.model.http_client import HttpClientConfig
from tests.integration.engine.conftest import (
    STEP,
    T0,
    make_engine,
    openmetrics,
    series,
    states,
    write_rules,
)

pytestmark = pytest.mark.e2e

RULES = """\
groups:
  - name: outage
    rules:
      - alert: Idle
        expr: idle > 0
        for: 2m
"""
# "a" is idle throughout; "b" recovers at minute 3, during the outage.
DATA = openmetrics(series("idle", {"a": [1.0] * 40, "b": [1.0] * 3 + [0.0] * 37}))


def _stored(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT rule_key, labels, state, active_at, fired_at FROM engine_alerts ORDER BY 2"
        ).fetchall()


@pytest.mark.parametrize("outage", ["refused", "timeout", "503", "warnings"])
def test_outage_leaves_state_unchanged(
    outage: str, prometheus: Any, query_proxy: Any, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=DATA)
    proxy = query_proxy(prom.url)
    rules = write_rules(tmp_path / "rules.yaml", RULES)
    db = tmp_path / "state.db"
    engine = make_engine(proxy.url, rules, state=db, timeout=1.0)
    (group,) = engine.groups
    for minute in range(3):
        engine.evaluate(group.key, T0 + minute * STEP)
    before = states(engine)
    assert before == {"a": "firing", "b": "firing"}
    stored_before = _stored(db)

    if outage == "refused":
        dead = PrometheusQuerier(
            PrometheusAccess(
                HttpClientConfig(f"http://127.0.0.1:{free_loopback_port()}", timeout=1)
            )
        )
        engine.query = dead.query
    elif outage == "timeout":
        proxy.behaviour.delay_seconds = 1.5
    elif outage == "503":
        proxy.behaviour.status = 503
    else:
        proxy.behaviour.warnings = ("partial response: store unavailable",)

    during: list[GroupEvaluation] = [
        engine.evaluate(group.key, T0 + minute * STEP) for minute in (3, 4)
    ]

    for evaluation in during:
        (outcome,) = evaluation.outcomes
        assert not outcome.health.actionable
        expected = "warnings" if outage == "warnings" else "failed"
        assert outcome.health.value == expected
        assert evaluation.transitions == ()
    assert states(engine) == before  # b recovered in the data but is NOT resolved
    assert [row[:5] for row in _stored(db)] == [row[:5] for row in stored_before]
    unhealthy = engine.metrics.registry.get_sample_value(
        "guardian_rule_evaluations_unhealthy_total",
        {"group": "outage", "rule": "Idle", "reason": during[0].outcomes[0].reason or ""},
    )
    assert unhealthy == 2.0

    # Recovery: the next healthy evaluation resolves b, normally.
    proxy.behaviour.delay_seconds = 0
    proxy.behaviour.status = None
    proxy.behaviour.warnings = ()
    engine.query = PrometheusQuerier(PrometheusAccess(HttpClientConfig(proxy.url, timeout=5))).query
    after = engine.evaluate(group.key, T0 + 5 * STEP)
    assert [(t.kind, t.labels["instance"]) for t in after.transitions] == [
        (TransitionKind.RESOLVED, "b")
    ]
    assert after.outcomes[0].health is EvaluationHealth.OK


LONG_RULES = """\
groups:
  - name: restart
    rules:
      - alert: LongIdle
        expr: idle > 0
        for: 30m
      - alert: QuickIdle
        expr: idle > 0
        for: 1m
"""


def test_restart_continues_for_timer_and_does_not_refire(prometheus: Any, tmp_path: Path) -> None:
    prom = prometheus(openmetrics=openmetrics(series("idle", {"a": [1.0] * 60})))
    rules = write_rules(tmp_path / "rules.yaml", LONG_RULES)
    db = tmp_path / "state.db"
    first = make_engine(prom.url, rules, state=db)
    (group,) = first.groups
    for minute in range(21):  # LongIdle pending for 20 minutes, QuickIdle firing
        first.evaluate(group.key, T0 + minute * STEP)
    assert {a.rule: a.alert.state.value for a in first.active_alerts()} == {
        "LongIdle": "pending",
        "QuickIdle": "firing",
    }
    quick_fired_at = next(a.alert.fired_at for a in first.active_alerts() if a.rule == "QuickIdle")
    first.close()  # the process stops at minute 20 ...

    seen: list[GroupEvaluation] = []
    second = make_engine(prom.url, rules, state=db, listeners=[seen.append])
    assert second.load_state() == 1
    # ... and is back 2 minutes later. 10 minutes of the 30m timer remain (>= grace):
    # the downtime does not count, so it fires at minute 22 + 10 = 32, not at 30 and
    # not 30 minutes after the restart.
    fired_at = None
    for minute in range(22, 40):
        evaluation = second.evaluate(group.key, T0 + minute * STEP)
        for transition in evaluation.transitions:
            assert transition.rule != "QuickIdle", "a firing alert must not fire again"
            if transition.kind is TransitionKind.FIRING:
                fired_at = minute
    assert fired_at == 32
    quick = next(a.alert for a in second.active_alerts() if a.rule == "QuickIdle")
    assert quick.state.value == "firing"
    assert quick.fired_at == quick_fired_at
    assert len(seen) == 18
