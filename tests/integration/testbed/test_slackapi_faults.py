"""Injected faults (429, 5xx, outages, pacing) as slack_sdk's retry handlers see them."""

from __future__ import annotations

import threading
import time
from urllib.error import URLError

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.http_retry.handler import RetryHandler

from testbed.slackapi import ANY, FakeSlack
from tests.integration.testbed.slack_fixtures import (  # noqa: F401 - fixtures
    ALERTS,
    TEAM,
    TOKEN,
    fake_slack_fixture,
    slack_client_fixture,
)

QUICK = FixedValueRetryIntervalCalculator(fixed_internal=0.01)


def _client(fake: FakeSlack, *handlers: RetryHandler) -> WebClient:
    return WebClient(
        token=TOKEN, base_url=fake.api_base_url, timeout=5, retry_handlers=list(handlers)
    )


def test_429_is_retried_after_retry_after(fake_slack: FakeSlack) -> None:
    # 2 s, because without the header slack_sdk waits 1 s + random() and would pass a 1 s check.
    fake_slack.rate_limit("chat.postMessage", count=1, retry_after=2)
    client = _client(fake_slack, RateLimitErrorRetryHandler(max_retry_count=1))
    started = time.monotonic()
    posted = client.chat_postMessage(channel="C0123", text="idle GPU")
    waited = time.monotonic() - started
    assert posted["ok"]
    assert waited >= 2.0, f"the client retried after {waited:.2f}s, before Retry-After"
    calls = fake_slack.requests_for("chat.postMessage")
    assert [(c.status, c.error) for c in calls] == [(429, "ratelimited"), (200, None)]
    assert calls[1].received_at - calls[0].received_at >= 2.0
    assert calls[0].body == calls[1].body
    assert [m.text for m in fake_slack.messages("C0123")] == ["idle GPU"]


def test_429_without_a_handler_reaches_the_caller(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    fake_slack.rate_limit("chat.postMessage", count=2, retry_after=7)
    for _ in range(2):
        with pytest.raises(SlackApiError) as raised:
            slack_client.chat_postMessage(channel="C0123", text="x")
        response = raised.value.response
        assert (response.status_code, response["error"]) == (429, "ratelimited")
        assert response.headers["Retry-After"] == "7"
    assert slack_client.chat_postMessage(channel="C0123", text="x")["ok"]
    # Other methods were never limited.
    assert slack_client.auth_test()["ok"]


def test_5xx_burst_with_server_error_retries(fake_slack: FakeSlack) -> None:
    fake_slack.fail("chat.update", status=503, count=1)
    fake_slack.fail("chat.postMessage", status=500, count=2)
    client = _client(
        fake_slack, ServerErrorRetryHandler(max_retry_count=2, interval_calculator=QUICK)
    )
    posted = client.chat_postMessage(channel="C0123", text="firing")
    assert client.chat_update(channel="C0123", ts=posted["ts"], text="resolved")["ok"]
    statuses = [(r.method, r.status) for r in fake_slack.requests]
    assert statuses == [
        ("chat.postMessage", 500),
        ("chat.postMessage", 500),
        ("chat.postMessage", 200),
        ("chat.update", 503),
        ("chat.update", 200),
    ]
    assert [(m.text, m.update_count) for m in fake_slack.messages("C0123")] == [("resolved", 1)]


def test_502_is_not_retried_by_slack_sdk(fake_slack: FakeSlack) -> None:
    """ServerErrorRetryHandler retries 500 and 503 only; a caller must handle 502 itself."""
    fake_slack.fail(ANY, status=502, count=1)
    client = _client(
        fake_slack, ServerErrorRetryHandler(max_retry_count=2, interval_calculator=QUICK)
    )
    with pytest.raises(SlackApiError) as raised:
        client.chat_postMessage(channel="C0123", text="x")
    assert raised.value.response.status_code == 502
    assert client.chat_postMessage(channel="C0123", text="x")["ok"]
    assert fake_slack.faults.pending(ANY) == 0


def test_fail_accepts_only_5xx(fake_slack: FakeSlack) -> None:
    with pytest.raises(ValueError, match="5xx"):
        fake_slack.fail("chat.postMessage", status=429)
    with pytest.raises(ValueError, match="count"):
        fake_slack.rate_limit("chat.postMessage", count=0)
    with pytest.raises(ValueError, match="retry_after"):
        fake_slack.rate_limit("chat.postMessage", retry_after=-1)


def test_channel_pacing_with_an_injected_clock() -> None:
    now = [1_700_000_000.0]
    with FakeSlack.start(
        channels=[ALERTS, TEAM], clock=lambda: now[0], channel_rate=1.0, channel_burst=1
    ) as fake:
        client = _client(fake)
        first = client.chat_postMessage(channel=ALERTS.id, text="1")
        for step in (0.0, 0.5):
            now[0] += step
            with pytest.raises(SlackApiError) as raised:
                client.chat_postMessage(channel=ALERTS.id, text="too soon")
            assert raised.value.response.status_code == 429
            assert raised.value.response.headers["Retry-After"] == "1"
        assert client.chat_postMessage(channel=TEAM.id, text="another channel")["ok"]
        assert client.chat_update(channel=ALERTS.id, ts=first["ts"], text="edits are not paced")
        now[0] += 0.5
        assert client.chat_postMessage(channel=ALERTS.id, text="2")["ok"]
        assert [m.text for m in fake.messages(ALERTS.id)] == ["edits are not paced", "2"]
        assert fake.pacer is not None
        assert fake.pacer.rejected == 2


def test_pacing_and_retry_handler_deliver_in_order() -> None:
    with FakeSlack.start(channels=[ALERTS], channel_rate=1.0, channel_burst=1) as fake:
        client = _client(fake, RateLimitErrorRetryHandler(max_retry_count=2))
        for text in ("firing", "grace"):
            client.chat_postMessage(channel=ALERTS.id, text=text)
        accepted = [r for r in fake.requests_for("chat.postMessage") if r.status == 200]
        assert accepted[1].received_at - accepted[0].received_at >= 1.0
        assert [m.text for m in fake.messages(ALERTS.id)] == ["firing", "grace"]


def test_outage_refuses_connections_then_recovers(fake_slack: FakeSlack) -> None:
    client = _client(
        fake_slack, ConnectionErrorRetryHandler(max_retry_count=1, interval_calculator=QUICK)
    )
    url = fake_slack.url
    fake_slack.down()
    with pytest.raises(URLError, match="refused"):
        client.chat_postMessage(channel="C0123", text="lost?")
    fake_slack.up()
    assert fake_slack.url == url
    assert client.chat_postMessage(channel="C0123", text="after the outage")["ok"]
    assert [m.text for m in fake_slack.messages("C0123")] == ["after the outage"]


def test_outage_resets_connections(fake_slack: FakeSlack) -> None:
    fake_slack.down("reset")
    client = _client(fake_slack)
    with pytest.raises((ConnectionError, URLError)):
        client.chat_postMessage(channel="C0123", text="x")
    fake_slack.up()
    assert client.chat_postMessage(channel="C0123", text="x")["ok"]


def test_outage_answers_503(fake_slack: FakeSlack) -> None:
    fake_slack.down("unavailable")
    client = _client(fake_slack)
    with pytest.raises(SlackApiError) as raised:
        client.chat_postMessage(channel="C0123", text="x")
    assert raised.value.response.status_code == 503
    fake_slack.up()
    assert client.chat_postMessage(channel="C0123", text="x")["ok"]
    assert [r.status for r in fake_slack.requests] == [503, 200]


def test_outage_modes_can_follow_each_other(fake_slack: FakeSlack) -> None:
    client = _client(fake_slack)
    fake_slack.down("refuse")
    fake_slack.down("unavailable")
    with pytest.raises(SlackApiError) as raised:
        client.auth_test()
    assert raised.value.response.status_code == 503
    fake_slack.up()
    assert client.auth_test()["ok"]


def test_stop_closes_the_port_and_joins_threads() -> None:
    fake = FakeSlack.start()
    client = _client(fake)
    assert client.auth_test()["ok"]
    fake.stop()
    fake.stop()
    with pytest.raises(URLError, match="refused"):
        client.auth_test()
    assert not [t for t in threading.enumerate() if t.name.startswith("fake-slack-")]
