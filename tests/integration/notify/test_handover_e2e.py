"""Slack threads across leaders: each replica has its own SQLite, the episode state is
shared in the (fake) cluster. A new leader updates the parent the old one posted and
replies in its thread; after a restart with no state at all, the alert firing again is
not announced again; a replica that may not send sends nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.sqlite_db import Database
from guardian.app.notify import NotifierLinks, SlackNotifier
from guardian.app.notify.thread_handover import pack_finding, unpack_finding
from guardian.app.remediation.journal import EpisodeJournal
from guardian.model.labels import LabelSet
from guardian.model.reclaim import PlannedAction
from guardian.model.remediation_events import LadderStep, StepOutcome
from testbed.slackapi import FakeSlack
from tests.integration.notify.helpers import (
    ALERTS,
    T0,
    TOKEN,
    WORKLOAD,
    drain_all,
    event,
    firing,
    labels,
    settings,
    transition,
)
from tests.unit.guardian.notify.samples import reclaimed

pytestmark = pytest.mark.e2e
EPISODE = "workload-episode-train-0"


@pytest.fixture
def rest(api_client: Any) -> KubeRest:
    return KubeRest(api_client, timeout=5.0)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as f:
        yield f


class Replica:
    """A notifier on its own database, handing over through its own journal."""

    def __init__(self, fake: FakeSlack, rest: KubeRest, path: Path, name: str, **kw: Any) -> None:
        self.db = Database.open(path / f"{name}.db")
        self.journal = EpisodeJournal(EpisodeStore(rest, "gpu-guardian"), name)
        self.notifier = SlackNotifier.from_settings(
            settings(fake),
            self.db,
            time.time,
            {"SLACK_BOT_TOKEN": TOKEN},
            NotifierLinks(handover=self.journal, **kw),
        )

    def close(self) -> None:
        self.db.close()


def _ladder_started(replica: Replica, lbl: LabelSet) -> None:
    """What the remediation loop records for the episode's first step."""
    notify = PlannedAction(WORKLOAD, LadderStep.NOTIFY, "reclaim-idle", EPISODE, "idle", False, lbl)
    replica.journal.refresh()
    replica.journal.claim(notify, T0, T0 + 360)
    replica.journal.settle(notify, StepOutcome.APPLIED, T0 + 360)


def test_a_new_leader_goes_on_in_the_old_leaders_thread(
    fake: FakeSlack, rest: KubeRest, tmp_path: Path
) -> None:
    lbl = labels()
    a = Replica(fake, rest, tmp_path, "a")
    a.notifier.on_transitions([firing(lbl)])
    drain_all(a.notifier)
    _ladder_started(a, lbl)
    a.notifier.on_remediation([event(lbl, LadderStep.NOTIFY, T0 + 360)])
    drain_all(a.notifier)
    assert a.notifier.publish_handover() == 1
    assert a.notifier.publish_handover() == 0  # once per parent
    [parent] = fake.messages(ALERTS.id)
    record = a.journal.get(EPISODE)
    assert record is not None
    assert record.slack is not None
    assert (record.slack.ts, record.slack.channel_id) == (parent.ts, ALERTS.id)
    a.close()

    b = Replica(fake, rest, tmp_path, "b")  # the survivor: never saw the alert fire
    b.notifier.on_remediation(
        [
            event(lbl, LadderStep.GRACE, T0 + 420, StepOutcome.PLANNED,
                  next_step=LadderStep.RECLAIM, next_step_due=T0 + 2200),
            event(lbl, LadderStep.RECLAIM, T0 + 2200, original_replicas=2,
                  restore_command="guardian restore ml/Deployment/train"),
        ]
    )  # fmt: skip
    drain_all(b.notifier)
    [same] = fake.messages(ALERTS.id)
    assert same.ts == parent.ts
    assert same.text.startswith("[RECLAIMED]")
    assert "An allocated GPU has been idle" in str(same.blocks)  # the content it had
    assert len(same.replies) == 3  # notify (a), grace and reclaimed (b)
    assert b.notifier.publish_handover() == 0  # already shared with this ts
    b.close()


def test_after_a_restart_without_state_the_alert_is_not_announced_again(
    fake: FakeSlack, rest: KubeRest, tmp_path: Path
) -> None:
    lbl = labels()
    a = Replica(fake, rest, tmp_path, "a")
    a.notifier.on_transitions([firing(lbl)])
    drain_all(a.notifier)
    _ladder_started(a, lbl)
    a.notifier.on_remediation([event(lbl, LadderStep.NOTIFY, T0 + 360)])
    drain_all(a.notifier)
    a.notifier.publish_handover()
    a.close()

    # Both replicas restarted with empty state: the engine fires the alert anew.
    c = Replica(fake, rest, tmp_path, "c")
    again = transition(firing(lbl).kind, lbl, at=T0 + 900, active_at=T0 + 600)
    c.notifier.on_transitions([again])
    c.notifier.on_remediation([event(lbl, LadderStep.RECLAIM, T0 + 2200, original_replicas=2)])
    drain_all(c.notifier)
    [parent] = fake.messages(ALERTS.id)
    assert parent.text.startswith("[RECLAIMED]")
    assert len(parent.replies) == 2
    c.close()


def test_a_replica_that_may_not_send_sends_nothing(
    fake: FakeSlack, rest: KubeRest, tmp_path: Path
) -> None:
    allowed = [True]
    a = Replica(fake, rest, tmp_path, "a", may_send=lambda: allowed[0])
    a.notifier.on_transitions([firing(labels())])
    allowed[0] = False  # the Lease is lost (or the last renewal is too old)
    assert a.notifier.drain() is not None
    assert fake.messages(ALERTS.id) == []
    assert a.notifier.outbox_depth() == 1
    allowed[0] = True
    drain_all(a.notifier)
    assert len(fake.messages(ALERTS.id)) == 1
    a.close()


def test_a_packed_finding_comes_back_whole() -> None:
    finding = reclaimed()
    packed = pack_finding(finding)
    assert "labels" not in packed
    assert None not in packed.values()
    assert unpack_finding(packed, finding.labels, finding.episode) == finding
    assert "namespace" not in packed  # copied from the labels: not kept twice
    odd = finding.with_changes(severity="critical", pod=None)  # not what the labels say
    assert unpack_finding(pack_finding(odd), odd.labels, odd.episode) == odd
