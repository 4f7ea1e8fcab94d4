"""The engine listener that sends: after each group evaluation, what is due, leader only;
a failed rule sends nothing and keeps its send times."""

from __future__ import annotations

from collections.abc import Sequence

from guardian.app.alertmanager.output import AlertmanagerOutput
from guardian.app.rules.runtime import RuleEngine
from guardian.engine.alertmanager.sending import SendSettings
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.model.alertmanager_api import PostableAlert
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule, RuleGroup

T = 1_700_000_000.0
RULE = AlertingRule("GpuIdle", "idle", 0.0, labels={"severity": "warning"})
GROUP = CompiledGroup.compile(RuleGroup("g", "f.yaml", (RULE,)), 60.0)


class Queue:
    def __init__(self) -> None:
        self.sent: list[PostableAlert] = []

    def send(self, alerts: Sequence[PostableAlert]) -> None:
        self.sent.extend(alerts)


class Answers:
    def __init__(self) -> None:
        self.fail = False

    def __call__(self, expr: str, ts: float) -> QueryResult:
        if self.fail:
            raise RuntimeError("boom")
        return QueryResult((PromSample(LabelSet({"pod": "p-1"}), 0.0),))


def setup(leader: list[bool]) -> tuple[RuleEngine, Queue, Answers]:
    answers = Answers()
    engine = RuleEngine([GROUP], answers)
    queue = Queue()
    output = AlertmanagerOutput(
        engine,
        queue,  # type: ignore[arg-type]
        SendSettings(external_url="http://g"),
        is_leader=lambda: leader[0],
    )
    engine.listeners.append(output.on_evaluation)
    return engine, queue, answers


def test_due_alerts_are_queued_after_each_evaluation() -> None:
    engine, queue, _ = setup([True])
    engine.evaluate(GROUP.key, T)  # for: 0 fires at once
    (alert,) = queue.sent
    assert alert.labels == {"alertname": "GpuIdle", "pod": "p-1", "severity": "warning"}
    assert alert.starts_at == T
    assert alert.ends_at == T + 240
    assert alert.generator_url == "http://g/graph?g0.expr=idle&g0.tab=1"
    engine.evaluate(GROUP.key, T + 60)
    assert len(queue.sent) == 1  # not yet due again (strictly after 1m)
    engine.evaluate(GROUP.key, T + 120)
    assert len(queue.sent) == 2


def test_a_failed_evaluation_sends_nothing_and_keeps_the_send_times() -> None:
    engine, queue, answers = setup([True])
    engine.evaluate(GROUP.key, T)
    answers.fail = True
    engine.evaluate(GROUP.key, T + 120)
    assert len(queue.sent) == 1
    answers.fail = False
    engine.evaluate(GROUP.key, T + 180)
    assert [a.starts_at for a in queue.sent] == [T, T]  # due again (last sent at T)


def test_only_the_leader_sends() -> None:
    leader = [False]
    engine, queue, _ = setup(leader)
    engine.evaluate(GROUP.key, T)
    assert queue.sent == []
    leader[0] = True
    engine.evaluate(GROUP.key, T + 60)
    assert len(queue.sent) == 1  # nothing sent yet: at once
