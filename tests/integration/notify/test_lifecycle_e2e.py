"""The notifier against the fake Slack with the real slack_sdk: one living message per episode."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from guardian.adapters.ledger import Ledger
from guardian.adapters.sqlite_db import Database
from guardian.app.notify import NotifierLinks, SlackNotifier
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from testbed.slackapi import FakeSlack
from tests.integration.notify.helpers import (
    ALERTS,
    T0,
    TEAM,
    TOKEN,
    drain_all,
    event,
    firing,
    labels,
    notifier,
    open_db,
    resolved,
    settings,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS, TEAM]) as f:
        yield f


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    yield database
    database.close()


def test_episode_parent_is_updated_through_its_ladder_with_a_thread(db: Database) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS], channel_rate=1.0) as fake:
        _ladder(fake, db)


def _ladder(fake: FakeSlack, db: Database) -> None:
    n = notifier(fake, db, delivery={"post_interval": "1100ms"})
    lbl = labels()
    n.on_transitions([firing(lbl)])
    n.on_remediation(
        [
            event(
                lbl,
                LadderStep.GRACE,
                T0 + 400,
                next_step=LadderStep.RECLAIM,
                next_step_due=T0 + 2200,
            ),
        ]
    )
    drain_all(n)
    [parent] = fake.messages("gpu-alerts")
    assert "[GRACE PERIOD]" in parent.text
    assert parent.blocks[0]["text"]["text"].startswith(":hourglass_flowing_sand: [GRACE PERIOD]")
    n.on_remediation(
        [
            event(
                lbl,
                LadderStep.RECLAIM,
                T0 + 2200,
                original_replicas=2,
                restore_command="guardian restore ml/Deployment/train",
            ),
            event(lbl, LadderStep.RESTORE, T0 + 9000),
        ]
    )
    n.on_transitions([resolved(lbl, T0 + 2300)])
    drain_all(n)

    [parent] = fake.messages("gpu-alerts")
    assert parent.update_count == 4  # grace, reclaimed, restored, resolved
    shown = [e.text for e in parent.edits] + [parent.text]
    assert [s.split("]")[0] for s in shown] == [
        "[FIRING",
        "[GRACE PERIOD",
        "[RECLAIMED",
        "[RESTORED",
        "[RESTORED",
    ]
    assert "guardian restore ml/Deployment/train" in str(parent.edits[2].blocks)
    assert "(alert resolved)" in parent.text
    assert "RESOLVED" in parent.blocks[0]["text"]["text"]
    assert [r.text.split(" GpuIdle")[0] for r in parent.replies] == [
        "[GRACE PERIOD]",
        "[RECLAIMED]",
        "[RESTORED]",
        "[RESOLVED]",
    ]
    accepted = [r for r in fake.requests_for("chat.postMessage") if r.status == 200]
    gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(accepted)]
    assert min(gaps) >= 1.0, gaps
    assert fake.pacer is not None
    assert fake.pacer.rejected == 0
    assert n.outbox_depth() == 0


def test_resolved_episode_is_marked_resolved(fake: FakeSlack, db: Database) -> None:
    n = notifier(fake, db)
    lbl = labels()
    n.on_transitions([firing(lbl)])
    n.on_transitions([resolved(lbl, T0 + 900)])
    n.on_transitions([resolved(lbl, T0 + 900)])  # a replay changes nothing
    drain_all(n)
    [parent] = fake.messages("gpu-alerts")
    assert parent.text.startswith("[RESOLVED]")
    assert parent.blocks[0]["text"]["text"].startswith(":white_check_mark: [RESOLVED]")
    assert [r.text for r in parent.replies] == ["[RESOLVED] GpuIdle ml/train-0: Alert resolved."]


def test_message_not_found_posts_afresh(fake: FakeSlack, db: Database) -> None:
    n = notifier(fake, db)
    lbl = labels()
    n.on_transitions([firing(lbl)])
    drain_all(n)
    [first] = fake.messages("gpu-alerts")
    fake.delete_message("gpu-alerts", first.ts)
    n.on_remediation([event(lbl, LadderStep.GRACE, T0 + 400)])
    drain_all(n)
    [fresh] = fake.messages("gpu-alerts")
    assert fresh.ts != first.ts
    assert fresh.text.startswith("[GRACE PERIOD]")
    assert [r.text.split(":")[0] for r in fresh.replies] == ["[GRACE PERIOD] GpuIdle ml/train-0"]
    assert fake.orphan_replies("gpu-alerts") == []
    errors = [r.error for r in fake.requests_for("chat.update")]
    assert errors == ["message_not_found"]
    # Later updates go to the new parent.
    n.on_transitions([resolved(lbl, T0 + 900)])
    drain_all(n)
    [fresh] = fake.messages("gpu-alerts")
    assert fresh.update_count == 1
    assert fresh.text.startswith("[RESOLVED]")


def test_routing_by_namespace_and_mentions(fake: FakeSlack, db: Database) -> None:
    from guardian.model.labels import LabelSet
    from guardian.model.notifications import MENTION_ANNOTATION, OwnerContext

    def owner(lbls: LabelSet) -> OwnerContext:
        return OwnerContext(
            namespace_annotations=LabelSet({MENTION_ANNOTATION: "U0ONCALL, S0MLTEAM"})
        )

    n = SlackNotifier.from_settings(
        settings(
            fake, routing={"default_channel": "#gpu-alerts", "by_namespace": {"team": "C0456"}}
        ),
        db,
        time.time,
        {"SLACK_BOT_TOKEN": TOKEN},
        NotifierLinks(context=owner),
    )
    n.on_transitions([firing(labels(namespace="team")), firing(labels(pod="other"))])
    drain_all(n)
    [team] = fake.messages("ml-team")
    assert "<@U0ONCALL> <!subteam^S0MLTEAM>" in team.text
    assert "<@U0ONCALL>" in str(team.blocks)
    [other] = fake.messages("gpu-alerts")
    assert other.text.startswith("[FIRING] warning GpuIdle: ml/Pod other on gpu-node-1 - ")


def test_grouping_many_alerts_of_one_rule_and_namespace(fake: FakeSlack, db: Database) -> None:
    n = notifier(fake, db, grouping={"min_alerts": 3})
    pods = [f"worker-{i}" for i in range(5)]
    n.on_transitions([firing(labels(pod=p)) for p in pods] + [firing(labels(namespace="solo"))])
    drain_all(n)
    summary, solo = fake.messages("gpu-alerts")
    assert summary.text.startswith("5 x GpuIdle in ml")
    assert len(summary.replies) == 5
    assert all("worker-" in r.text for r in summary.replies)
    assert solo.text.startswith("[FIRING] warning GpuIdle: solo/")
    n.on_transitions([resolved(labels(pod="worker-3"), T0 + 900)])
    drain_all(n)
    summary, _ = fake.messages("gpu-alerts")
    assert summary.update_count == 1
    assert "firing 4 · resolved 1" in str(summary.blocks)
    assert summary.replies[-1].text == "[RESOLVED] GpuIdle ml/worker-3: Alert resolved."


def test_outbox_depth_metric_while_slack_is_down(fake: FakeSlack, db: Database) -> None:
    registry = CollectorRegistry()
    n = SlackNotifier.from_settings(
        settings(fake), db, time.time, {"SLACK_BOT_TOKEN": TOKEN}, NotifierLinks(registry=registry)
    )
    fake.down("refuse")
    n.on_transitions([firing(labels(pod=f"p{i}")) for i in range(3)])
    n.drain()
    depth = registry.get_sample_value("guardian_slack_outbox_depth", {"channel": "#gpu-alerts"})
    assert depth == 3
    fake.up()
    drain_all(n)
    assert len(fake.messages("gpu-alerts")) == 3
    assert (
        registry.get_sample_value("guardian_slack_outbox_depth", {"channel": "#gpu-alerts"}) is None
    )
    uncertain = registry.get_sample_value(
        "guardian_slack_requests_total", {"op": "post", "result": "uncertain"}
    )
    assert uncertain is not None
    assert uncertain >= 1


def test_worker_thread_delivers_and_stops(fake: FakeSlack, db: Database) -> None:
    n = notifier(fake, db)
    n.start()
    try:
        n.on_transitions([firing(labels())])
        deadline = time.monotonic() + 10
        while not fake.messages("gpu-alerts"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        n.stop()
    assert not [t for t in threading.enumerate() if t.name == "slack-notifier"]


class _Ledger:
    """Ledger.events_since's contract: events after ``seq``, each with its ``seq``."""

    def __init__(self, events: list[RemediationEvent]) -> None:
        self.events = events
        self.asked: list[int] = []

    def append(self, e: RemediationEvent) -> None:
        self.events.append(dataclasses.replace(e, seq=10 * (len(self.events) + 1)))

    def events_since(self, seq: int) -> list[RemediationEvent]:
        self.asked.append(seq)
        return [e for e in self.events if e.seq is not None and e.seq > seq][:1]


def test_remediation_feed_is_read_since_the_stored_cursor(fake: FakeSlack, db: Database) -> None:
    lbl = labels()
    ledger = _Ledger([])
    ledger.append(event(lbl, LadderStep.GRACE, T0 + 400, StepOutcome.APPLIED))
    n = notifier(fake, db)
    n.on_transitions([firing(lbl)])
    assert n.poll_remediation(ledger) == 1
    ledger.append(event(lbl, LadderStep.RECLAIM, T0 + 2200, restore_command="guardian restore x"))
    ledger.append(event(lbl, LadderStep.RESTORE, T0 + 3000, alert_labels=LabelSet()))
    restarted = notifier(fake, db)
    assert restarted.poll_remediation(ledger) == 2  # one per batch here
    assert ledger.asked == [0, 10, 10, 20, 30]  # the restart resumed at the stored cursor
    drain_all(restarted)
    # One parent: the ledger's workload episode was matched to the alert's episode, and
    # the restore event (no alert labels) followed the remembered match.
    [parent] = fake.messages("gpu-alerts")
    assert parent.text.startswith("[RESTORED]")
    assert [r.text.split("]")[0] for r in parent.replies] == [
        "[GRACE PERIOD",
        "[RECLAIMED",
        "[RESTORED",
    ]


def test_the_real_ledger_feeds_the_notifier(fake: FakeSlack, db: Database) -> None:
    ledger = Ledger.attach(db)
    n = notifier(fake, db)
    lbl = labels()
    n.on_transitions([firing(lbl)])
    ledger.record(event(lbl, LadderStep.GRACE, T0 + 400, next_step=LadderStep.RECLAIM))
    ledger.record(event(lbl, LadderStep.RECLAIM, T0 + 2200, restore_command="guardian restore y"))
    assert n.poll_remediation(ledger) == 2
    assert n.poll_remediation(ledger) == 0
    drain_all(n)
    [parent] = fake.messages("gpu-alerts")
    assert parent.text.startswith("[RECLAIMED]")
    assert "guardian restore y" in str(parent.blocks)
    assert len(parent.replies) == 2
