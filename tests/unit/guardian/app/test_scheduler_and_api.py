"""Slot timestamps and missed iterations, and the /api/v1/alerts formats."""

from __future__ import annotations

import pytest

from guardian.app.http_api import format_api_value
from guardian.app.rules.metrics import EngineMetrics
from guardian.app.rules.runtime import RuleEngine
from guardian.app.rules.scheduler import GroupScheduler
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.slots import slot_at_or_before
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule, RuleGroup
from guardian.model.times import rfc3339

GROUP = RuleGroup("g", "rules.yaml", (AlertingRule("A", "vector(1)"),), interval_seconds=60)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_jobs_evaluate_at_the_slot_and_count_missed_slots() -> None:
    asked: list[float] = []

    def query(_expr: str, ts: float) -> QueryResult:
        asked.append(ts)
        return QueryResult((PromSample(LabelSet({"job": "x"}), 1.0),))

    metrics = EngineMetrics()
    engine = RuleEngine([CompiledGroup.compile(GROUP, 60)], query, metrics=metrics)
    clock = Clock(1_700_000_000.0)
    scheduler = GroupScheduler(engine, clock=clock)
    key = GROUP.key
    slot = slot_at_or_before(clock.now, GROUP.file, GROUP.name, 60)

    clock.now = slot + 0.7  # the job runs a little late: the timestamp is still the slot
    scheduler.run_group(key)
    scheduler.run_group(key)  # the same slot twice is evaluated once
    clock.now = slot + 60.2
    scheduler.run_group(key)
    clock.now = slot + 240.1  # two slots skipped
    scheduler.run_group(key)

    assert asked == [slot, slot + 60, slot + 240]
    missed = metrics.registry.get_sample_value(
        "guardian_rule_group_iterations_missed_total", {"group": "g"}
    )
    assert missed == 2.0
    last = metrics.registry.get_sample_value(
        "guardian_rule_group_last_evaluation_timestamp_seconds", {"group": "g"}
    )
    assert last == slot + 240
    assert engine.ready()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1e+00"),
        (0.0, "0e+00"),
        (1234567.0, "1.234567e+06"),
        (0.05, "5e-02"),
        (-2.5, "-2.5e+00"),
        (1e-300, "1e-300"),
        (float("nan"), "NaN"),
        (float("inf"), "+Inf"),
    ],
)
def test_api_value_is_go_e_format(value: float, text: str) -> None:
    assert format_api_value(value) == text


def test_rfc3339() -> None:
    assert rfc3339(1_700_000_000.0, "ms") == "2023-11-14T22:13:20Z"
    assert rfc3339(1_700_000_000.25, "ms") == "2023-11-14T22:13:20.250Z"
    assert rfc3339(1_700_000_000.25) == "2023-11-14T22:13:20Z"  # annotations: whole seconds
