"""Fixtures for the engine against a real Prometheus with backfilled history."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.openmetrics import Sample, render_openmetrics
from testbed.query_proxy import QueryProxy

# A fixed, old start: deterministic, and far from the server's own head block.
T0 = 1_700_000_000.0
STEP = 60.0


def series(name: str, patterns: Mapping[str, Sequence[float | None]], **extra: str) -> list[Sample]:
    """One sample per minute from T0 for each instance; None leaves a gap."""
    out: list[Sample] = []
    for instance, values in patterns.items():
        for i, value in enumerate(values):
            if value is not None:
                labels = {"instance": instance, **extra}
                out.append(Sample(name, labels, T0 + i * STEP, value))
    return out


def openmetrics(*groups: list[Sample]) -> str:
    return render_openmetrics([s for group in groups for s in group])


@pytest.fixture
def query_proxy() -> Iterator[Any]:
    proxies: list[QueryProxy] = []

    def start(upstream: str) -> QueryProxy:
        proxy = QueryProxy(upstream).start()
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.stop()


def write_rules(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load_groups(path: Path, default_interval: float = 60.0) -> list[Any]:
    from guardian.engine.rules.group_eval import CompiledGroup
    from guardian.engine.rules.loader import parse_rule_file

    rule_file = parse_rule_file(path.read_text(encoding="utf-8"), str(path))
    return [CompiledGroup.compile(g, default_interval) for g in rule_file.groups]


def make_engine(
    url: str,
    rules: Path,
    *,
    state: Path | None = None,
    timeout: float = 5.0,
    external_labels: Mapping[str, str] | None = None,
    listeners: Sequence[Any] = (),
) -> Any:
    from guardian.adapters.alert_store import AlertStore
    from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
    from guardian.app.rules.engine_setup import EngineSinks, EvaluationSetup
    from guardian.app.rules.runtime import RuleEngine
    from guardian.engine.rules.compiled import TemplateEnv
    from guardian.model.http_client import HttpClientConfig

    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(url, timeout=timeout)))
    store = AlertStore.open(str(state)) if state is not None else None
    return RuleEngine(
        load_groups(rules),
        querier.query,
        evaluation=EvaluationSetup(
            env=TemplateEnv(external_labels or {}, "https://guardian.example")
        ),
        sinks=EngineSinks(store=store, listeners=listeners),
    )


def states(engine: Any) -> dict[str, str]:
    """instance (or alertname) -> state of every pending/firing alert."""
    return {
        a.alert.labels.get("instance", a.alert.labels["alertname"]): a.alert.state.value
        for a in engine.active_alerts()
    }
