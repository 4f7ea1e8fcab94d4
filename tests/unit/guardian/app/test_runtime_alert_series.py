"""What the running engine remote-writes: ALERTS built on the rule's labels as written."""

from __future__ import annotations

from typing import Any

from guardian.app.rules.engine_setup import EngineSinks
from guardian.app.rules.runtime import RuleEngine
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule, RuleGroup
from guardian.model.series import TimeSeries


class _Writer:
    def __init__(self) -> None:
        self.writes: list[list[TimeSeries]] = []

    def write(self, series: list[TimeSeries]) -> None:
        self.writes.append(series)

    def close(self) -> None:
        pass


RULE = AlertingRule(
    name="Idle",
    expr='absent(m{job=~".+", job="api"})',
    labels={"team": "{{ $labels.team }}", "severity": "warning"},
)
GROUP = RuleGroup(name="g", file="f.yaml", rules=(RULE,))


def test_alerts_carry_raw_rule_labels_and_the_printed_query_is_evaluated() -> None:
    queries: list[str] = []

    def query(expr: str, _ts: float) -> QueryResult:
        queries.append(expr)
        return QueryResult((PromSample(LabelSet({}), 1.0),))

    writer = _Writer()
    engine = RuleEngine(
        [CompiledGroup.compile(GROUP, 60)],
        query,
        sinks=EngineSinks(remote_write=writer),  # type: ignore[arg-type]
    )

    engine.evaluate(GROUP.key, 120.0)

    assert queries == ['absent(m{job="api",job=~".+"})']
    (alert,) = [a.alert for a in engine.active_alerts()]
    assert dict(alert.labels) == {"alertname": "Idle", "severity": "warning"}
    labels: dict[str, Any] = {s.name: dict(s.labels) for s in writer.writes[0]}
    assert labels["ALERTS"] == {
        "__name__": "ALERTS",
        "alertname": "Idle",
        "alertstate": "firing",
        "severity": "warning",
        "team": "{{ $labels.team }}",
    }
    assert labels["ALERTS_FOR_STATE"]["team"] == "{{ $labels.team }}"
