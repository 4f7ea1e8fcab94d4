"""Delivery you can trust: 429 storms, 5xx bursts, outages, restarts, crashes, webhooks, secrets."""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.slack.transport import (
    FileUpload,
    Secret,
    Sent,
    Uncertain,
    WebApiTransport,
    WebhookTransport,
)
from guardian.app.notify import SlackNotifier
from guardian.model.remediation_events import LadderStep
from guardian_common.errors import ConfigError
from testbed.slackapi import WEBHOOK, FakeSlack
from tests.integration.notify.helpers import (
    ALERTS,
    T0,
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


def _texts(fake: FakeSlack) -> list[str]:
    return [m.text for m in fake.messages("gpu-alerts")]


def test_429_storm_every_message_arrives_in_order_and_pacing_holds(tmp_path: Path) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS], channel_rate=1.0) as fake:
        db = open_db(tmp_path)
        n = notifier(fake, db, delivery={"post_interval": "1100ms"}, grouping={"enabled": False})
        fake.rate_limit("chat.postMessage", count=3, retry_after=1)
        pods = [f"pod-{i}" for i in range(4)]
        n.on_transitions([firing(labels(pod=p)) for p in pods])
        drain_all(n, timeout=40)
        assert [m.split("Pod ")[1].split(" ")[0] for m in _texts(fake)] == pods
        calls = fake.requests_for("chat.postMessage")
        assert [c.status for c in calls].count(429) == 3
        accepted = [c for c in calls if c.status == 200]
        assert len(accepted) == 4
        gaps = [b.received_at - a.received_at for a, b in itertools.pairwise(accepted)]
        assert min(gaps) >= 1.0, gaps
        assert fake.pacer is not None
        assert fake.pacer.rejected == 0  # the pacing held: Slack never had to say "too fast"
        db.close()


def test_5xx_burst_is_retried_without_duplicates(tmp_path: Path) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        db = open_db(tmp_path)
        n = notifier(fake, db)
        lbl = labels()
        fake.fail("chat.postMessage", status=502, count=2)
        fake.fail("chat.update", status=503, count=2)
        n.on_transitions([firing(lbl)])
        n.on_remediation([event(lbl, LadderStep.GRACE, T0 + 400)])
        drain_all(n)
        [parent] = fake.messages("gpu-alerts")
        assert parent.text.startswith("[GRACE PERIOD]")
        assert len(parent.replies) == 1
        statuses = [(r.method, r.status) for r in fake.requests]
        assert statuses.count(("chat.postMessage", 502)) == 2
        assert statuses.count(("chat.update", 503)) == 2
        # An ambiguous failure of a post is checked against history before re-posting.
        assert ("conversations.history", 200) in statuses
        db.close()


def test_restart_with_a_full_outbox_sends_everything_once(tmp_path: Path) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        db = open_db(tmp_path)
        first = notifier(fake, db, grouping={"enabled": False})
        fake.down("refuse")
        pods = [f"pod-{i}" for i in range(5)]
        first.on_transitions([firing(labels(pod=p)) for p in pods])
        first.on_transitions([resolved(labels(pod="pod-1"), T0 + 900)])
        first.drain()  # every head fails: Slack is down
        assert first.outbox_depth() == 7
        db.close()

        fake.up()
        db = open_db(tmp_path)
        second = notifier(fake, db, grouping={"enabled": False})
        # The engine replays the same transitions after its own restart: no new messages.
        second.on_transitions([firing(labels(pod=p)) for p in pods])
        drain_all(second)
        messages = fake.messages("gpu-alerts")
        assert [m.text.split("Pod ")[1].split(" ")[0] for m in messages] == pods
        assert [m.update_count for m in messages] == [0, 1, 0, 0, 0]
        assert messages[1].text.startswith("[RESOLVED]")
        assert second.outbox_depth() == 0
        db.close()


class Crash(BaseException):
    """The process dies: nothing after this line runs."""


class _CrashAfterPost:
    """Slack accepts the post, then the process dies before the ts is committed."""

    can_update = True

    def __init__(self, inner: WebApiTransport, crash_on: int) -> None:
        self.inner = inner
        self.posts = 0
        self.crash_on = crash_on

    def post(self, channel: str, payload: dict[str, Any], thread_ts: str | None) -> Sent:
        sent = self.inner.post(channel, payload, thread_ts)
        self.posts += 1
        if self.posts == self.crash_on:
            raise Crash
        return sent

    def update(self, channel_id: str, ts: str, payload: dict[str, Any]) -> Sent:
        return self.inner.update(channel_id, ts, payload)

    def find(self, channel: str, marker: str, oldest: float, thread_ts: str | None) -> Sent | None:
        return self.inner.find(channel, marker, oldest, thread_ts)

    def upload(self, upload: FileUpload) -> str:
        return self.inner.upload(upload)


def _drain_until_crash(n: SlackNotifier) -> None:
    for _ in range(20):
        n.drain()
        time.sleep(0.15)


@pytest.mark.parametrize("crash_on", [1, 2], ids=["parent", "reply"])
def test_crash_between_post_and_commit_is_reconciled(tmp_path: Path, crash_on: int) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        db = open_db(tmp_path)
        real = WebApiTransport(Secret(TOKEN), base_url=fake.api_base_url, timeout=5)
        lbl = labels()
        n = SlackNotifier(settings(fake), db, time.time, _CrashAfterPost(real, crash_on))
        n.on_transitions([firing(lbl)])
        n.on_remediation([event(lbl, LadderStep.GRACE, T0 + 400)])
        with pytest.raises(Crash):
            _drain_until_crash(n)
        db.close()

        db = open_db(tmp_path)
        restarted = notifier(fake, db)
        drain_all(restarted)
        [parent] = fake.messages("gpu-alerts")
        assert parent.text.startswith("[GRACE PERIOD]")
        assert len(parent.replies) == 1
        assert len(fake.requests_for("chat.postMessage")) == 2  # parent + reply, once each
        looked = "conversations.history" if crash_on == 1 else "conversations.replies"
        assert len(fake.requests_for(looked)) == 1
        db.close()


def test_webhook_mode_posts_a_new_message_per_change(tmp_path: Path) -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        url = fake.webhook_url("gpu-alerts")
        db = open_db(tmp_path)
        n = SlackNotifier.from_settings(
            settings(fake, mode="webhook"), db, time.time, {"SLACK_WEBHOOK_URL": url}
        )
        lbl = labels()
        fake.rate_limit(WEBHOOK, count=1, retry_after=1)
        n.on_transitions([firing(lbl)])
        n.on_remediation([event(lbl, LadderStep.GRACE, T0 + 400)])
        n.on_transitions([resolved(lbl, T0 + 900)])
        drain_all(n)
        messages = fake.messages("gpu-alerts")
        assert [m.text.split("]")[0] for m in messages] == ["[FIRING", "[GRACE PERIOD", "[RESOLVED"]
        assert {m.via for m in messages} == {"webhook"}
        assert all(m.update_count == 0 and not m.replies for m in messages)
        assert "Grace period started" in str(messages[1].blocks)
        db.close()


def test_secrets_never_appear_in_logs_or_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        db = open_db(tmp_path)
        n = notifier(fake, db)
        fake.fail("chat.postMessage", status=502, count=1)
        n.on_transitions([firing(labels())])
        drain_all(n)
        fake.down("reset")
        n.on_transitions([resolved(labels(), T0 + 900)])
        n.drain()
        fake.up()
        drain_all(n)
        url = fake.webhook_url("gpu-alerts")
        hook = SlackNotifier.from_settings(
            settings(fake, mode="webhook"), db, time.time, {"SLACK_WEBHOOK_URL": url}
        )
        fake.fail(WEBHOOK, status=500, count=1)
        hook.on_transitions([firing(labels(pod="w"))])
        drain_all(hook)
        wrong = SlackNotifier.from_settings(
            settings(fake), db, time.time, {"SLACK_BOT_TOKEN": TOKEN + "-revoked"}
        )
        wrong.on_transitions([firing(labels(pod="x"))])
        wrong.drain()
        db.close()
    # Everything but the fake server's own access log (the stand-in for Slack's side).
    ours = "\n".join(
        r.getMessage() + str(r.exc_info or "")
        for r in caplog.records
        if not r.name.startswith("testbed")
    )
    assert "Sending a request" in ours  # slack_sdk's debug logging was on
    assert "url: [redacted]" in ours
    assert TOKEN not in ours
    assert url.rsplit("/", 1)[1] not in ours
    assert "invalid_auth" in ours
    with pytest.raises(ConfigError) as raised:
        SlackNotifier.from_settings(
            settings(None, token_file=str(tmp_path / "missing")), open_db(tmp_path), time.time, {}
        )
    assert "missing" in str(raised.value)
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        SlackNotifier.from_settings(settings(None), open_db(tmp_path), time.time, {})
    assert TOKEN not in repr(Secret(TOKEN))
    assert TOKEN not in str(Secret(TOKEN))


def test_transport_errors_never_carry_the_token() -> None:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as fake:
        web = WebApiTransport(Secret(TOKEN), base_url=fake.api_base_url, timeout=5)
        bad = WebApiTransport(Secret(TOKEN + "x"), base_url=fake.api_base_url, timeout=5)
        hook_url = fake.webhook_url("gpu-alerts")
        hook = WebhookTransport(Secret(hook_url), timeout=5)
        payload = {"text": "x", "blocks": []}
        errors: list[Exception] = []
        fake.fail("chat.postMessage", status=502)
        fake.fail(WEBHOOK, status=503)
        for call in (
            lambda: web.post("C0123", payload, None),
            lambda: bad.post("C0123", payload, None),
            lambda: web.post("C0999", payload, None),
            lambda: web.update("C0123", "1.000001", payload),
            lambda: hook.post("gpu-alerts", payload, None),
            lambda: hook.update("C0123", "1.000001", payload),
        ):
            with pytest.raises(Exception) as raised:  # noqa: PT011 - every kind is checked below
                call()
            errors.append(raised.value)
        fake.down("refuse")
        with pytest.raises(Uncertain) as refused:
            web.post("C0123", payload, None)
        errors.append(refused.value)
    assert [type(e).__name__ for e in errors] == [
        "Uncertain",
        "Unauthorized",
        "Rejected",
        "MessageGone",
        "Uncertain",
        "MessageGone",
        "Uncertain",
    ]
    for error in errors:
        text = f"{error} {error!r} {error.args}"
        assert TOKEN not in text
        assert hook_url.rsplit("/", 1)[1] not in text
        assert error.__cause__ is None  # "from None": the library's exception is not chained
