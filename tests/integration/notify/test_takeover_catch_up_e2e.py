"""A new leader meets alerts that fired before it led (a standby records nothing): the
one the old leader had posted keeps its one parent, which the new leader adopts and goes
on updating; the one that fired in the gap, after the old leader died and before the new
one took the Lease, is announced. Real slack_sdk against the fake Slack."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardian.adapters.sqlite_db import Database
from guardian.model.alerts import AlertState
from testbed.slackapi import FakeSlack
from tests.integration.notify.helpers import (
    ALERTS,
    T0,
    TOKEN,
    drain_all,
    firing,
    labels,
    notifier,
    open_db,
    resolved,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as f:
        yield f


@pytest.fixture
def dbs(tmp_path: Path) -> Iterator[tuple[Database, Database]]:
    a, b = open_db(tmp_path / "a"), open_db(tmp_path / "b")
    yield a, b
    a.close()
    b.close()


def _still_firing(t):  # type: ignore[no-untyped-def]
    """The transition as the new leader's engine holds it: already firing."""
    return dataclasses.replace(t, previous=AlertState.FIRING, at=T0 + 900)


def test_the_new_leader_adopts_the_posted_parent_and_announces_the_one_fired_in_the_gap(
    fake: FakeSlack, dbs: tuple[Database, Database]
) -> None:
    db_a, db_b = dbs
    posted, gap = firing(labels(pod="a-0")), firing(labels(pod="b-0"), at=T0 + 600)
    old = notifier(fake, db_a)
    old.on_transitions([posted])
    drain_all(old)  # then replica a dies; b led nothing until now
    [parent] = fake.messages(ALERTS.id)

    new = notifier(fake, db_b)
    assert new.catch_up_firing([_still_firing(posted), _still_firing(gap)]) == 2
    drain_all(new)

    texts = [m.text for m in fake.messages(ALERTS.id)]
    assert len(texts) == 2, texts  # the old parent, and one for the alert fired in the gap
    assert sum("b-0" in t for t in texts) == 1
    # A second look changes nothing: both are known now.
    assert new.catch_up_firing([_still_firing(posted), _still_firing(gap)]) == 0
    # The adopted parent is the one the new leader updates.
    new.on_transitions([resolved(labels(pod="a-0"), T0 + 1200)])
    drain_all(new)
    [again] = [m for m in fake.messages(ALERTS.id) if m.ts == parent.ts]
    assert again.text.startswith("[RESOLVED]")
    assert len(fake.messages(ALERTS.id)) == 2


def test_without_history_a_caught_up_alert_is_posted_again_at_least_once(
    fake: FakeSlack, dbs: tuple[Database, Database]
) -> None:
    db_a, db_b = dbs
    posted = firing(labels(pod="a-0"))
    old = notifier(fake, db_a)
    old.on_transitions([posted])
    drain_all(old)

    new = notifier(fake, db_b, delivery={"reconcile": "resend"})
    assert new.catch_up_firing([_still_firing(posted)]) == 1
    drain_all(new)
    assert len(fake.messages(ALERTS.id)) == 2  # documented: without history, a duplicate
