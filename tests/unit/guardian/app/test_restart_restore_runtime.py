"""The engine's side of the restore from ALERTS_FOR_STATE: when it runs, what it writes
before, retries, giving up, and the leader-only remote write."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.app.rules.engine_setup import EngineSinks, RestoreSetup
from guardian.app.rules.metrics import EngineMetrics
from guardian.app.rules.restart_restore_gather import ForStateRestorer
from guardian.app.rules.runtime import RuleEngine
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.restart_restore import RestorePolicy
from guardian.model.alerts import AlertState
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, PromSample, QueryResult, RangeSeries
from guardian.model.rules import AlertingRule, RuleGroup
from guardian.model.series import TimeSeries
from guardian_common.errors import PermanentError, TransientError

T = 1_700_000_000.0
RULE = AlertingRule("Idle", "up == 0", for_seconds=1800)
SERIES = LabelSet({"__name__": "ALERTS_FOR_STATE", "alertname": "Idle", "pod": "p"})


def _group(name: str = "g") -> CompiledGroup:
    return CompiledGroup.compile(RuleGroup(name, "r.yaml", (RULE,), interval_seconds=60), 60)


class Prometheus:
    """Answers the rule's query, and ALERTS_FOR_STATE as an earlier leader left it: the
    alert pending since T - 1200, last written at T - 600."""

    def __init__(self, failures: list[Exception] | None = None) -> None:
        self.failures = failures or []
        self.matrix_calls = 0

    def query(self, _expr: str, _ts: float) -> QueryResult:
        return QueryResult((PromSample(LabelSet({"pod": "p"}), 1.0),))

    def query_matrix(self, _expr: str, _ts: float) -> MatrixResult:
        self.matrix_calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return MatrixResult((RangeSeries(SERIES, ((round((T - 600) * 1000), T - 1200),)),))

    def query_range(self, _expr: str, start: float, end: float, step: float) -> MatrixResult:
        steps = range(round(start * 1000), round(end * 1000) + 1, round(step * 1000))
        present = tuple((ms, T - 1200) for ms in steps if ms <= (T - 600 + 300) * 1000)
        return MatrixResult((RangeSeries(SERIES, present),))


class Writer:
    def __init__(self) -> None:
        self.writes: list[list[TimeSeries]] = []

    def write(self, series: list[TimeSeries]) -> None:
        self.writes.append(series)

    def close(self) -> None:
        pass


def _engine(prom: Prometheus, **kw: Any) -> tuple[RuleEngine, Writer]:
    metrics = EngineMetrics()
    writer = Writer()
    restorer = ForStateRestorer(prom, external_labels={}, policy=RestorePolicy(), metrics=metrics)
    engine = RuleEngine(
        [_group()],
        prom.query,
        metrics=metrics,
        restore=RestoreSetup(from_prometheus=restorer, clock=lambda: T + 0.5),
        sinks=EngineSinks(remote_write=writer, **kw),  # type: ignore[arg-type]
    )
    return engine, writer


def _run(engine: RuleEngine, *minutes: int) -> None:
    for minute in minutes:
        engine.evaluate(engine.groups[0].key, T - 120 + 60 * minute)


def _active_at(engine: RuleEngine) -> float:
    (alert,) = engine.active_alerts()
    return alert.alert.active_at


def test_restores_after_the_second_evaluation_and_writes_only_afterwards() -> None:
    prom = Prometheus()
    engine, writer = _engine(prom)
    _run(engine, 0)
    assert (prom.matrix_calls, writer.writes) == (0, [])
    _run(engine, 1)
    assert prom.matrix_calls == 1
    assert writer.writes == []
    assert _active_at(engine) == T - 1200 + (T + 0.5 - (T - 600))  # downtime not counted
    _run(engine, 2, 3)
    assert prom.matrix_calls == 1  # once
    assert len(writer.writes) == 2


@pytest.mark.parametrize(
    ("failures", "calls", "restored"),
    [
        ([TransientError("down")] * 2, 3, True),  # retried after the next evaluations
        ([TransientError("down")] * 3, 3, False),  # three attempts, then given up
        ([PermanentError("401")], 1, False),  # retrying cannot help
        ([RuntimeError("bug")], 1, False),  # never stops the evaluations
    ],
)
def test_failed_restores_retry_transient_errors_only(
    failures: list[Exception], calls: int, restored: bool
) -> None:
    prom = Prometheus(list(failures))
    engine, writer = _engine(prom)
    _run(engine, *range(8))
    assert prom.matrix_calls == calls
    assert (_active_at(engine) != T - 120) is restored
    failed = engine.metrics.for_state_restore_failures.labels("g")._value.get()
    assert failed == len(failures)
    assert writer.writes  # writing resumed once the restore was done or given up


def test_only_the_leader_writes_and_reloaded_groups_are_not_restored() -> None:
    prom = Prometheus()
    leader = [False]
    engine, writer = _engine(prom, may_write=lambda: leader[0])
    _run(engine, 0, 1, 2)
    assert writer.writes == []
    leader[0] = True
    _run(engine, 3)
    assert len(writer.writes) == 1

    engine.replace_groups([_group(), _group("added")])
    added = engine.groups[1].key
    engine.evaluate(added, T + 120)  # a group from a reload: no restore, writes at once
    assert prom.matrix_calls == 1
    assert len(writer.writes) == 2


def test_an_alert_that_fired_across_a_missed_slot_gets_its_active_at_back() -> None:
    # The flake of the HA end-to-end test: a wiped replica's second evaluation came one
    # slot late, so the alert fired from its fresh ActiveAt before the restore. As in
    # Prometheus, the restore still gives it the ActiveAt its series kept.
    short = AlertingRule("Idle", "up == 0", for_seconds=600)
    group = CompiledGroup.compile(RuleGroup("g", "r.yaml", (short,), interval_seconds=60), 60)
    prom = Prometheus()
    metrics = EngineMetrics()
    restorer = ForStateRestorer(prom, external_labels={}, policy=RestorePolicy(), metrics=metrics)
    engine = RuleEngine(
        [group],
        prom.query,
        metrics=metrics,
        restore=RestoreSetup(from_prometheus=restorer, clock=lambda: T + 0.5),
    )
    engine.evaluate(group.key, T - 660)
    engine.evaluate(group.key, T)  # ten slots missed: the `for` elapsed
    (alert,) = engine.active_alerts()
    assert alert.alert.state is AlertState.FIRING
    assert alert.alert.active_at == T - 1200  # restored: elapsed before the outage
    assert alert.alert.fired_at == T
