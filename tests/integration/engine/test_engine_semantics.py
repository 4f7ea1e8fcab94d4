"""Prometheus's alerting semantics, evaluated by the engine against a real Prometheus.

Data is backfilled one sample a minute from T0; the engine evaluates at T0 + k minutes,
exactly as a group on a 1m slot would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guardian.model.alerts import EvaluationHealth, GroupEvaluation, TransitionKind
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

ON, OFF = 1.0, 0.0

RULES = """\
groups:
  - name: semantics
    rules:
      - alert: Held
        expr: held > 0
        for: 5m
      - alert: Sticky
        expr: sticky > 0
        keep_firing_for: 3m
      - alert: Flappy
        expr: flappy > 0
        for: 2m
"""


def _run(engine: Any, minutes: range) -> dict[int, tuple[dict[str, str], GroupEvaluation]]:
    (group,) = engine.groups
    out = {}
    for minute in minutes:
        evaluation = engine.evaluate(group.key, T0 + minute * STEP)
        out[minute] = (states(engine), evaluation)
    return out


def _kinds(evaluation: GroupEvaluation) -> list[str]:
    return [f"{t.rule}:{t.kind.value}" for t in evaluation.transitions]


def test_for_keep_firing_for_resolve_and_return(prometheus: Any, tmp_path: Path) -> None:
    data = openmetrics(
        series("held", {"h": [ON] * 12}),
        series("sticky", {"s": [ON] * 3 + [OFF] * 9}),
        series("flappy", {"f": [ON] * 4 + [OFF] * 2 + [ON] * 6}),
    )
    rules = write_rules(tmp_path / "rules.yaml", RULES)
    prom = prometheus(openmetrics=data)
    engine = make_engine(prom.url, rules, state=tmp_path / "state.db")

    run = _run(engine, range(12))

    held = [run[m][0].get("h") for m in range(7)]
    assert held == ["pending"] * 5 + ["firing"] * 2  # for: 5m fires at +5m
    sticky = [run[m][0].get("s") for m in range(8)]
    # Condition ends at minute 3; kept firing 3..5, resolved at 6 (ts - since == 3m).
    assert sticky == ["firing"] * 6 + [None, None]
    flappy = [run[m][0].get("f") for m in range(12)]
    # Fires at 2, resolves at 4, comes back at 6 as a NEW pending alert, fires at 8.
    assert flappy == [
        "pending",
        "pending",
        "firing",
        "firing",
        None,
        None,
        "pending",
        "pending",
        "firing",
        "firing",
        "firing",
        "firing",
    ]
    assert "Flappy:resolved" in _kinds(run[4][1])
    assert "Flappy:pending" in _kinds(run[6][1])
    assert "Sticky:resolved" in _kinds(run[6][1])
    assert all(o.health is EvaluationHealth.OK for _, e in run.values() for o in e.outcomes)


def test_collision_fails_the_rule_and_keeps_its_state(prometheus: Any, tmp_path: Path) -> None:
    data = openmetrics(
        series("m", {"a": [ON] * 6}),
        series("m2", {"a": [None] * 3 + [ON] * 3}),
    )
    rules = write_rules(
        tmp_path / "rules.yaml",
        """\
groups:
  - name: collide
    rules:
      - alert: Collides
        expr: '{__name__=~"m|m2"} > 0'
        for: 1m
""",
    )
    prom = prometheus(openmetrics=data)
    engine = make_engine(prom.url, rules)

    run = _run(engine, range(5))

    assert run[1][0] == {"a": "firing"}
    outcome = run[3][1].outcomes[0]
    assert outcome.health is EvaluationHealth.FAILED
    assert outcome.reason == "collision"
    assert "same labelset after applying alert labels" in (outcome.error or "")
    assert run[3][0] == {"a": "firing"}  # unchanged, not resolved
    assert run[4][0] == {"a": "firing"}


def test_limit(prometheus: Any, tmp_path: Path) -> None:
    data = openmetrics(series("m", {"a": [ON] * 4, "b": [None] * 2 + [ON] * 2}))
    rules = write_rules(
        tmp_path / "rules.yaml",
        "groups:\n- name: lim\n  limit: 1\n  rules:\n  - alert: Lim\n    expr: m > 0\n",
    )
    prom = prometheus(openmetrics=data)
    engine = make_engine(prom.url, rules)

    run = _run(engine, range(3))

    assert run[1][0] == {"a": "firing"}
    outcome = run[2][1].outcomes[0]
    assert outcome.error == "exceeded limit of 1 with 2 alerts"
    assert run[2][0] == {}  # Prometheus clears the rule's alerts
    (cleared,) = run[2][1].transitions
    assert cleared.kind is TransitionKind.RESOLVED
    assert not cleared.evidence.health.actionable


def test_templating_labels_annotations_and_query(prometheus: Any, tmp_path: Path) -> None:
    data = openmetrics(
        series("gpu_util", {"n1:9400": [3.5] * 3}, pod="train-0", namespace="ml"),
        series("gpu_total", {"all": [1234567.0] * 3}),
    )
    rules = write_rules(
        tmp_path / "rules.yaml",
        """\
groups:
  - name: tmpl
    rules:
      - alert: GpuIdle
        expr: gpu_util < 5
        labels:
          severity: warning
          owner: '{{ $labels.namespace | toUpper }}'
          pod: ''
        annotations:
          summary: '{{ $labels.pod }} on {{ $labels.instance | stripPort }} is {{ $value }}%'
          fleet: '{{ with query "gpu_total" }}{{ . | first | value | humanize }}{{ end }}'
          cluster: '{{ $externalLabels.cluster }}'
          big: '{{ 1234567.0 }}'
""",
    )
    prom = prometheus(openmetrics=data)
    engine = make_engine(prom.url, rules, external_labels={"cluster": "prod"})

    run = _run(engine, range(1))

    (alert,) = [a.alert for a in engine.active_alerts()]
    assert dict(alert.labels) == {
        "alertname": "GpuIdle",
        "instance": "n1:9400",
        "namespace": "ml",
        "owner": "ML",
        "severity": "warning",
    }
    assert dict(alert.annotations) == {
        "summary": "train-0 on n1 is 3.5%",
        "fleet": "1.235M",
        "cluster": "prod",
        "big": "1.234567e+06",
    }
    (transition,) = run[0][1].transitions
    assert transition.annotations == alert.annotations
