"""For-state restored from ALERTS_FOR_STATE in a real Prometheus: Prometheus 2.42's rules at
their edges (grace period, outage tolerance, for < grace, an elapsed for), staleness
markers, external labels, and restarts with and without the state directory."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.remote_write import RemoteWriteClient
from guardian.app.rules.build import EngineParts, build_engine
from guardian.app.settings.config_file import parse_settings
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.model.alerts import AlertState
from guardian.model.http_client import HttpClientConfig
from guardian.model.series import ActiveAlertSample, TimeSeries
from tests.helpers import prom_get
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e

MIN = 60.0
# (case, ActiveAt and last sample as seconds from W, extra series labels)
CASES: dict[str, tuple[float, float, dict[str, str]]] = {
    "shifted_at_edge": (-30 * MIN, -10 * MIN, {}),  # 10m left == grace: downtime not counted
    "grace_at_edge": (-30 * MIN - 1, -10 * MIN, {}),  # 9m59s left < grace: gets the grace
    "elapsed": (-40 * MIN, -10 * MIN, {}),  # the 30m had elapsed: was firing
    "resolved": (-40 * MIN, -25 * MIN, {}),  # a staleness marker followed (see below)
    "ext_ours": (-30 * MIN, -10 * MIN, {"cluster": "c1"}),  # added by Thanos: ours
    "ext_other": (-30 * MIN, -10 * MIN, {"cluster": "c2"}),  # another cluster's
}


def _expr(cases: list[str]) -> str:
    return " or ".join(f'label_replace(vector(1), "case", "{c}", "", "")' for c in cases)


RULES = f"""\
groups:
  - name: restore
    interval: 1m
    rules:
      - alert: Long
        expr: '{_expr(list(CASES))}'
        for: 30m
        labels: {{severity: warning}}
      - alert: Short
        expr: '{_expr(["short"])}'
        for: 5m
"""


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[Any]:
    started: list[EngineParts] = []

    def start(prom_url: str, clock: Clock, state: str, **settings: Any) -> EngineParts:
        rules = tmp_path / "rules.yaml"
        rules.write_text(RULES, encoding="utf-8")
        config = {
            "prometheus": {"url": prom_url, "timeout": "10s"},
            "rule_files": [str(rules)],
            "state_path": str(tmp_path / state),
            "remote_write": {"url": f"{prom_url}/api/v1/write"},
            "external_labels": {"cluster": "c1"},
            "restore": {"for_grace_period": "10m", "for_outage_tolerance": "1h"},
            **settings,
        }
        parsed = parse_settings(yaml.safe_dump(config), str(tmp_path / "guardian.yaml"))
        parts = build_engine(parsed, clock=clock)
        started.append(parts)
        parts.engine.load_state()
        return parts

    yield start
    for parts in started:
        parts.engine.close()
        parts.querier.close()


def _minute() -> float:
    return float(int(time.time()) // 60 * 60)


def _evaluate(parts: EngineParts, *at: float) -> None:
    for ts in at:
        for group in parts.engine.groups:
            parts.engine.evaluate(group.key, ts)


def _active(parts: EngineParts) -> dict[str, tuple[str, float]]:
    return {
        a.alert.labels.get("case", a.rule): (a.alert.state.value, a.alert.active_at)
        for a in parts.engine.active_alerts()
    }


def _labels(name: str, case: str, extra: Mapping[str, str]) -> dict[str, str]:
    severity = {"severity": "warning"} if name == "Long" else {}
    return {"alertname": name, "case": case, **severity, **extra}


def _write_history(url: str, w: float) -> None:
    """What an earlier leader wrote: every case, each minute it was pending."""
    history = {
        case: (_labels("Long", case, x), w + a, w + last) for case, (a, last, x) in CASES.items()
    }
    history["short"] = (_labels("Short", "short", {}), w - 13 * MIN, w - 10 * MIN)
    client = RemoteWriteClient(HttpClientConfig(f"{url}/api/v1/write", timeout=10))
    previous: list[TimeSeries] = []
    for minute in range(-45, -9):
        ts = w + minute * MIN
        active = [
            ActiveAlertSample(labels, AlertState.PENDING, active_at)
            for labels, active_at, last in history.values()
            if active_at <= ts <= last
        ]
        ms = round(ts * 1000)
        current = build_alert_series(active, ms)
        # Markers for what ended (the resolved case), as the engine writes them.
        client.write(current + stale_series(previous, current, ms))
        previous = current
    client.close()


def test_restore_rules_at_their_edges(prometheus: PrometheusFactory, engines: Any) -> None:
    prom = prometheus()
    w = _minute()
    _write_history(prom.url, w)
    clock = Clock(w + 0.25)  # the wall clock just after the second evaluation
    parts = engines(prom.url, clock, "state.db")

    _evaluate(parts, w - MIN, w)

    fresh = w - MIN
    assert _active(parts) == {
        "shifted_at_edge": ("pending", w - 20 * MIN + 0.25),  # A0 + (now - downAt)
        "grace_at_edge": ("pending", clock.now + 10 * MIN - 30 * MIN),  # now + grace - for
        "elapsed": ("pending", w - 40 * MIN),  # kept: fires at the next evaluation
        "resolved": ("pending", fresh),  # starts over
        "ext_ours": ("pending", w - 20 * MIN + 0.25),
        "ext_other": ("pending", fresh),
        "short": ("pending", fresh),  # for < grace: not restored
    }
    restores = parts.engine.metrics.for_state_restores
    counts = {o: restores.labels(o)._value.get() for o in ("shifted", "grace", "elapsed")}
    assert counts == {"shifted": 2, "grace": 1, "elapsed": 1}
    assert restores.labels("resolved")._value.get() == 1
    assert restores.labels("short_for")._value.get() == 1

    # Nothing was written before the restore; the next evaluation writes restored values.
    window: Any = prom_get(prom.url, "/api/v1/query", query="ALERTS_FOR_STATE[9m]", time=str(w))
    assert window["result"] == []
    _evaluate(parts, w + MIN)
    assert _active(parts)["elapsed"] == ("firing", w - 40 * MIN)
    now: Any = prom_get(
        prom.url, "/api/v1/query", query='ALERTS_FOR_STATE{case="grace_at_edge"}', time=str(w + MIN)
    )
    assert [s["value"][1] for s in now["result"]] == [str(int(w - 20 * MIN))]


# 2 ms past the edge: 1 ms could round either way in a float of unix seconds.
@pytest.mark.parametrize(("after", "restored"), [(3600.0, True), (3600.002, False)])
def test_outage_longer_than_the_tolerance_starts_over(
    prometheus: PrometheusFactory, engines: Any, after: float, restored: bool
) -> None:
    prom = prometheus()
    w = _minute()
    _write_history(prom.url, w)
    last = w - 10 * MIN  # the last sample of shifted_at_edge
    clock = Clock(last + after)
    parts = engines(prom.url, clock, "state.db")

    _evaluate(parts, clock.now - 61, clock.now - 1)

    state, active_at = _active(parts)["shifted_at_edge"]
    shifted = w - 30 * MIN + after  # A0 + the whole outage
    assert (state, active_at) == ("pending", shifted if restored else clock.now - 61)


def test_state_directory_wiped_restores_from_prometheus_alone(
    prometheus: PrometheusFactory, engines: Any
) -> None:
    prom = prometheus()
    s0 = _minute() - 40 * MIN
    slots = [s0 + k * MIN for k in range(40)]
    first_clock = Clock(s0)
    first = engines(prom.url, first_clock, "first.db")
    for ts in slots[:21]:  # pending for 20m; series written from the third evaluation on
        first_clock.now = ts + 0.5
        _evaluate(first, ts)
    assert _active(first)["elapsed"] == ("pending", s0)
    first.engine.close()

    # A new pod: empty state directory, down 5 minutes. Restore after its second evaluation.
    clock = Clock(slots[26] + 0.5)
    second = engines(prom.url, clock, "wiped.db")
    _evaluate(second, slots[25], slots[26])
    restored = s0 + (clock.now - slots[20])  # 10m left >= grace: the outage is not counted
    assert _active(second)["elapsed"] == ("pending", restored)

    # The same pod with its state directory: the cache saw the group as late as Prometheus,
    # so it wins (its own restore, at the first evaluation's slot).
    third = engines(prom.url, Clock(slots[26] + 0.5), "first.db")
    _evaluate(third, slots[25], slots[26])
    assert _active(third)["elapsed"] == ("pending", s0 + (slots[25] - slots[20]))
    assert third.engine.metrics.for_state_restores.labels("cache_newer")._value.get() > 0

    # The restored pod fires 30m after the restored ActiveAt, not 30m after its start.
    for ts in slots[27:]:
        clock.now = ts + 0.5
        _evaluate(second, ts)
        firing = _active(second)["elapsed"][0] == "firing"
        assert firing is (ts - restored >= 30 * MIN), ts
