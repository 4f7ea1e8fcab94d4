"""The notifier's intake and outbox with a manual clock and a scripted transport:
reminders, mute windows, per-channel queues, rate limits, dead letters, settings."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from guardian.adapters.alert_store import ENGINE_MIGRATIONS, AlertStore
from guardian.adapters.slack.transport import (
    FileUpload,
    MessageGone,
    RateLimited,
    Rejected,
    Sent,
    Unauthorized,
    Uncertain,
)
from guardian.adapters.sqlite_db import Database
from guardian.app.notify import SlackNotifier, SlackSettings
from guardian.app.notify.service import Writer
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef
from tests.unit.guardian.notify.samples import ANNOTATIONS, LABELS, T0


@dataclass
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Call:
    method: str
    channel: str
    thread_ts: str | None
    text: str
    at: float


@dataclass
class ScriptedSlack:
    """Our Transport protocol, answering from a script of errors (else success)."""

    clock: Clock
    can_update: bool = True
    errors: list[Exception] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    counter: int = 0

    def _answer(
        self, method: str, channel: str, thread_ts: str | None, payload: dict[str, Any]
    ) -> Sent:
        self.calls.append(Call(method, channel, thread_ts, payload["text"], self.clock.now))
        if self.errors:
            raise self.errors.pop(0)
        self.counter += 1
        return Sent("C" + channel.strip("#").upper(), f"{int(self.clock.now)}.{self.counter:06d}")

    def post(self, channel: str, payload: dict[str, Any], thread_ts: str | None) -> Sent:
        return self._answer("post", channel, thread_ts, payload)

    def update(self, channel_id: str, ts: str, payload: dict[str, Any]) -> Sent:
        return self._answer("update", channel_id, ts, payload)

    def find(self, channel: str, marker: str, oldest: float, thread_ts: str | None) -> Sent | None:
        return None

    def upload(self, upload: FileUpload) -> str:
        self.counter += 1
        return f"F{self.counter:010d}"


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database.open(":memory:")
    yield database
    database.close()


def _settings(**extra: Any) -> SlackSettings:
    return SlackSettings.model_validate(
        {
            "routing": {"default_channel": "#alerts", "by_namespace": {"team": "#team"}},
            "repeat_interval": "1h",
            "delivery": {"post_interval": "1s", "backoff_initial": "10s", "backoff_max": "5m"},
            **extra,
        }
    )


def _firing(pod: str = "p", namespace: str = "ml", at: float = T0) -> AlertTransition:
    labels = LabelSet({**LABELS, "pod": pod, "namespace": namespace})
    return AlertTransition(
        TransitionKind.FIRING, AlertState.PENDING, "g", "GpuIdle", labels, ANNOTATIONS,
        0.01, at, at, Evidence(EvaluationHealth.OK, at, "q"),
    )  # fmt: skip


def _resolve(t: AlertTransition, at: float) -> AlertTransition:
    return AlertTransition(
        TransitionKind.RESOLVED, AlertState.FIRING, t.group, t.rule, t.labels, t.annotations,
        t.value, t.active_at, at, t.evidence,
    )  # fmt: skip


def _run(n: SlackNotifier, clock: Clock, limit: float = 3600) -> None:
    """Drain, moving the manual clock to each due time."""
    end = clock.now + limit
    while (due := n.drain()) is not None:
        assert due <= end, "the outbox did not drain"
        clock.now = max(clock.now, due)


def test_posts_are_paced_per_channel_and_channels_do_not_wait_for_each_other(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    n = SlackNotifier(_settings(grouping={"enabled": False}), db, clock, slack)
    n.on_transitions([_firing("a"), _firing("b"), _firing("c", namespace="team")])
    _run(n, clock)
    assert [(c.channel, c.at - T0) for c in slack.calls] == [
        ("#alerts", 0.0),
        ("#team", 0.0),
        ("#alerts", 1.0),
    ]


def test_a_rate_limited_channel_waits_retry_after_while_others_go_on(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock, errors=[RateLimited("429", delay=30)])
    n = SlackNotifier(_settings(grouping={"enabled": False}), db, clock, slack)
    n.on_transitions([_firing("a"), _firing("b"), _firing("c", namespace="team")])
    _run(n, clock)
    assert [(c.channel, c.text.split("Pod ")[1].split(" ")[0], c.at - T0) for c in slack.calls] == [
        ("#alerts", "a", 0.0),  # 429
        ("#team", "c", 0.0),
        ("#alerts", "a", 30.0),
        ("#alerts", "b", 31.0),
    ]


def test_errors_by_kind(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(
        clock,
        errors=[Uncertain("502"), Unauthorized("invalid_auth"), Rejected("invalid_blocks")],
    )
    n = SlackNotifier(_settings(grouping={"enabled": False}), db, clock, slack)
    n.on_transitions([_firing("a"), _firing("b")])
    _run(n, clock)
    times = [c.at - T0 for c in slack.calls]
    assert times == [0.0, 10.0, 310.0, 311.0]  # backoff 10s, then 5m for a refused token
    assert n.metrics.registry.get_sample_value("guardian_slack_dead_letters_total") == 1
    assert n.outbox_depth() == 0
    dead = db.read("SELECT last_error FROM slack_outbox WHERE state = 'dead'")
    assert dead == [("invalid_blocks",)]


def test_update_of_a_gone_parent_becomes_a_new_parent(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    n = SlackNotifier(_settings(), db, clock, slack)
    t = _firing()
    n.on_transitions([t])
    _run(n, clock)
    slack.errors.append(MessageGone("message_not_found"))
    n.on_transitions([_resolve(t, T0 + 600)])
    _run(n, clock)
    assert [(c.method, c.thread_ts) for c in slack.calls] == [
        ("post", None),
        ("update", f"{int(T0)}.000001"),
        ("post", None),
        ("post", f"{int(T0 + 1)}.000002"),  # the reply goes under the new parent
    ]


def test_reminders_come_at_the_repeat_interval_not_every_cycle(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    n = SlackNotifier(_settings(), db, clock, slack)
    t = _firing()
    n.on_transitions([t])
    _run(n, clock)
    for _ in range(9):  # 90 minutes of 10-minute cycles
        clock.now += 600
        n.tick()
        _run(n, clock)
    assert [c.text for c in slack.calls if "Reminder" in c.text] == [
        "[FIRING] GpuIdle ml/p: Reminder: still idle."
    ]
    assert len(slack.calls) == 3  # post, then one update + reply after an hour
    n.on_transitions([_resolve(t, clock.now)])
    clock.now += 7200
    n.tick()
    _run(n, clock)
    assert [c.text for c in slack.calls][-1] == "[RESOLVED] GpuIdle ml/p: Alert resolved."


def test_muted_episodes_are_held_and_sent_when_the_window_ends(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    start, end = "2025-11-24T15:00:00Z", "2025-11-24T17:00:00Z"  # T0 is 16:00 UTC
    n = SlackNotifier(_settings(mute=[{"start": start, "end": end}]), db, clock, slack)
    n.on_transitions([_firing("a"), _firing("b")])
    n.on_transitions([_resolve(_firing("b"), T0 + 60)])
    n.tick()
    _run(n, clock)
    assert slack.calls == []
    clock.now = T0 + 3600
    n.tick()
    _run(n, clock)
    # "a" is still idle: posted; "b" came and went while muted: nobody is bothered.
    assert [c.text.split(" - ")[0] for c in slack.calls] == [
        "[FIRING] warning GpuIdle: ml/Pod a on gpu-node-12"
    ]


def test_grouping_is_not_applied_twice_on_replay(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    n = SlackNotifier(_settings(grouping={"min_alerts": 2}), db, clock, slack)
    batch = [_firing("a"), _firing("b"), _firing("c", namespace="team")]
    n.on_transitions(batch)
    n.on_transitions(batch)
    _run(n, clock)
    assert [(c.method, c.thread_ts is None, c.text[:12]) for c in slack.calls] == [
        ("post", True, "2 x GpuIdle "),
        ("post", True, "[FIRING] war"),
        ("post", False, "[FIRING] war"),
        ("post", False, "[FIRING] war"),
    ]


def test_webhook_transport_gets_one_post_per_change(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock, can_update=False)
    n = SlackNotifier(_settings(), db, clock, slack)
    t = _firing()
    n.on_transitions([t])
    n.on_transitions([_resolve(t, T0 + 60)])
    _run(n, clock)
    assert [(c.method, c.thread_ts, c.text[:10]) for c in slack.calls] == [
        ("post", None, "[FIRING] w"),
        ("post", None, "[RESOLVED]"),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"colour": "red"}, "Extra inputs are not permitted"),
        ({"routing": {}}, "default_channel"),
        ({"mute": [{"daily_start": "22:00"}]}, "daily_start and daily_end together"),
        ({"mute": [{"start": "2026-01-01T00:00:00"}]}, "time zone"),
        ({"mute": [{"weekdays": ["mon"], "timezone": "Mars/Olympus"}]}, "unknown time zone"),
        ({"mute": [{"daily_start": "25:00", "daily_end": "01:00"}]}, "HH:MM"),
        ({"repeat_interval": "soon"}, "not a valid duration"),
        ({"grouping": {"min_alerts": 1}}, "greater than or equal to 2"),
        ({"api_url": "slack.com"}, "http"),
        ({"prices": {"per_model": {"A100": -1}}}, "greater than or equal to 0"),
    ],
)
def test_settings_are_strict(extra: dict[str, Any], message: str) -> None:
    data = {"routing": {"default_channel": "#a"}, **extra}
    with pytest.raises(ValidationError, match=message):
        SlackSettings.model_validate(data)


def test_settings_defaults() -> None:
    s = SlackSettings.model_validate({"routing": {"default_channel": "C0123"}})
    assert (s.mode, s.repeat_interval, s.delivery.post_interval) == ("bot", 14400.0, 1.1)
    assert s.delivery.reconcile == "history"
    assert s.api_url == "https://slack.com/api/"


def test_transitions_commit_together_with_the_engine_state(db: Database) -> None:
    db.migrate([ENGINE_MIGRATIONS])
    store = AlertStore(db)
    n = SlackNotifier(_settings(), db, Clock(), ScriptedSlack(Clock()))
    with n.prepare([_firing("a")]) as write:
        store.save_group("g", T0, {}, extra=write)
    assert n.outbox_depth() == 1

    def crashing(write: Writer) -> Writer:
        def crash(conn: sqlite3.Connection) -> None:
            write(conn)
            raise RuntimeError("the evaluation's commit failed")

        return crash

    with pytest.raises(RuntimeError, match="commit failed"), n.prepare([_firing("b")]) as write:
        store.save_group("g", T0 + 60, {}, extra=crashing(write))
    assert n.outbox_depth() == 1
    # The failed batch can be recorded again: it was rolled back, so never seen.
    with n.prepare([_firing("b")]) as write:
        store.save_group("g", T0 + 60, {}, extra=write)
    assert n.outbox_depth() == 2


def test_webhook_grouping_posts_the_summary_then_one_message_per_change(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock, can_update=False)
    n = SlackNotifier(_settings(grouping={"min_alerts": 2}), db, clock, slack)
    batch = [_firing("a"), _firing("b")]
    n.on_transitions(batch)
    n.on_transitions([_resolve(batch[1], T0 + 60)])
    _run(n, clock)
    assert [c.text[:16] for c in slack.calls] == ["2 x GpuIdle in m", "[RESOLVED] warni"]


def _step(step: LadderStep, labels: LabelSet, at: float, episode: str = "wl-1") -> RemediationEvent:
    workload = WorkloadRef("apps/v1", "Deployment", "ml", "train")
    return RemediationEvent(episode, workload, step, StepOutcome.APPLIED, at, "p", "idle", labels)


def test_ladder_episodes_find_their_alert_episode(db: Database) -> None:
    clock = Clock()
    slack = ScriptedSlack(clock)
    n = SlackNotifier(_settings(grouping={"enabled": False}), db, clock, slack)
    a, b = _firing("a"), _firing("b")
    n.on_transitions([a, b])
    # Same rule, namespace and pod, not quite the same labels: still a match.
    n.on_remediation([_step(LadderStep.GRACE, b.labels.without("uuid"), T0 + 60)])
    n.on_remediation([_step(LadderStep.RECLAIM, LabelSet(), T0 + 120)])  # follows the match
    n.on_remediation([_step(LadderStep.GRACE, LabelSet({"alertname": "X"}), T0, "wl-2")])
    _run(n, clock)
    parents = [c for c in slack.calls if c.method == "post" and c.thread_ts is None]
    assert [c.text.split(" - ")[0] for c in parents] == [
        "[FIRING] warning GpuIdle: ml/Pod a on gpu-node-12",
        "[FIRING] warning GpuIdle: ml/Pod b on gpu-node-12",
        "[GRACE PERIOD] none X: Deployment train",  # never saw its alert: a thread of its own
    ]
    updates = [c.text.split(" - ")[0] for c in slack.calls if c.method == "update"]
    assert updates == [
        "[GRACE PERIOD] warning GpuIdle: ml/Deployment train on gpu-node-12",
        "[RECLAIMED] warning GpuIdle: ml/Deployment train on gpu-node-12",
    ]
