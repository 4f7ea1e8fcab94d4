"""The engine and Prometheus itself, same rules and same data: the same alerts.

Prometheus evaluates the rule file on its own schedule; the engine evaluates it at
Prometheus's last evaluation timestamp. Every alert must match in labels, annotations
(templates included) and value. Rules use `for: 0` so both fire on their first
evaluation and the comparison does not depend on when each started.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.app.http_api import alert_json
from tests.helpers import prom_get
from tests.integration.engine.conftest import make_engine, write_rules

pytestmark = pytest.mark.e2e

RULES = """\
groups:
  - name: parity
    rules:
      - alert: GpuIdle
        expr: util < 5
        labels:
          severity: warning
          team: '{{ $labels.namespace | toUpper }}'
          instance: ''
        annotations:
          summary: '{{ $labels.pod }} idle at {{ $value }}% ({{ $value | humanizePercentage }})'
          memory: '{{ with query "sum(fb_used)" }}{{ . | first | value | humanize1024 }}{{ end }}'
          big: '{{ printf "%.2f" $value }} {{ 1234567.0 }}'
      - alert: FleetLarge
        expr: count(util) > 3
        annotations:
          count: '{{ $value }} GPUs'
"""


def _last_eval(url: str) -> float | None:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:  # noqa: S310
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "prometheus_rule_group_last_evaluation_timestamp_seconds" and (
                sample.labels.get("rule_group", "").endswith(";parity")
            ):
                return float(sample.value) if sample.value > 0 else None
    return None


def _comparable(alert: dict[str, Any]) -> tuple[Any, ...]:
    return (
        tuple(sorted(alert["labels"].items())),
        tuple(sorted(alert["annotations"].items())),
        alert["state"],
        alert["value"],
    )


def test_engine_matches_prometheus_alerts(prometheus: Any, tmp_path: Path) -> None:
    now = time.time()
    samples = []
    for i in range(6):
        labels = {
            "instance": f"n{i}:9400",
            "gpu": str(i),
            "namespace": f"ns{i % 2}",
            "pod": f"p{i}",
        }
        for minute in range(-10, 15):  # around now, so Prometheus's own evaluations see it
            ts = (now // 60) * 60 + minute * 60
            samples.append(Sample("util", labels, ts, 1.5 + i if i < 4 else 80.0))
            samples.append(Sample("fb_used", labels, ts, 1024.0**3 * (i + 1)))
    rules = write_rules(tmp_path / "rules.yaml", RULES)
    prom = prometheus(
        openmetrics=render_openmetrics(samples), rule_files=[rules], evaluation_interval="2s"
    )

    deadline = time.monotonic() + 30
    while True:
        before = _last_eval(prom.url)
        theirs = prom_get(prom.url, "/api/v1/alerts")["alerts"]
        after = _last_eval(prom.url)
        if before is not None and before == after and theirs:
            break
        assert time.monotonic() < deadline, "Prometheus did not evaluate the rules"
        time.sleep(0.3)

    engine = make_engine(prom.url, rules)
    (group,) = engine.groups
    evaluation = engine.evaluate(group.key, round(before * 1000) / 1000)
    ours = [alert_json(a) for a in engine.active_alerts()]

    assert all(o.health.actionable for o in evaluation.outcomes)
    assert len(ours) == 5  # 4 idle GPUs and the fleet alert
    assert sorted(map(_comparable, ours)) == sorted(map(_comparable, theirs))
