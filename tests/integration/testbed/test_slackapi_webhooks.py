"""Incoming webhooks on the fake Slack, driven by slack_sdk's WebhookClient."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from urllib.error import HTTPError

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from testbed.slackapi import WEBHOOK, FakeSlack
from tests.integration.testbed.slack_fixtures import (  # noqa: F401 - fixtures
    fake_slack_fixture,
    slack_client_fixture,
)

HEADER = {"type": "header", "text": {"type": "plain_text", "text": "GPU idle"}}


def _raw_post(url: str, body: bytes, content_type: str) -> tuple[int, str]:
    request = urllib.request.Request(  # noqa: S310 - loopback http
        url, data=body, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, response.read().decode()
    except HTTPError as error:
        with error:
            return error.code, error.read().decode()


def test_webhook_posts_and_cannot_be_updated(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    hook = WebhookClient(fake_slack.webhook_url("#gpu-alerts"), timeout=5)
    sent = hook.send(text="GPU idle: train-7", blocks=[HEADER])
    assert (sent.status_code, sent.body) == (200, "ok")
    [message] = fake_slack.messages("C0123")
    assert (message.text, message.blocks, message.via) == ("GPU idle: train-7", [HEADER], "webhook")

    with pytest.raises(SlackApiError) as raised:
        slack_client.chat_update(channel="C0123", ts=message.ts, text="resolved")
    assert raised.value.response["error"] == "cant_update_message"
    with pytest.raises(SlackApiError) as raised:
        slack_client.chat_delete(channel="C0123", ts=message.ts)
    assert raised.value.response["error"] == "cant_delete_message"
    history = slack_client.conversations_history(channel="C0123")["messages"]
    assert history[0]["subtype"] == "bot_message"


def test_webhook_thread_reply(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    parent = slack_client.chat_postMessage(channel="C0123", text="parent")
    hook = WebhookClient(fake_slack.webhook_url("C0123"), timeout=5)
    # Webhooks take thread_ts (api.slack.com/messaging/webhooks#threads), but a webhook
    # never learns a ts, so only a parent posted through the Web API can be named.
    reply = hook.send_dict({"text": "in the thread", "thread_ts": parent["ts"]})
    assert reply.status_code == 200
    [message] = fake_slack.messages("C0123")
    assert [r.text for r in message.replies] == ["in the thread"]


def test_webhook_errors(fake_slack: FakeSlack) -> None:
    url = fake_slack.webhook_url("gpu-alerts")
    hook = WebhookClient(url, timeout=5)
    empty = hook.send_dict({"unfurl_links": False})
    assert (empty.status_code, empty.body) == (400, "no_text")
    too_many = hook.send(text="x", blocks=[HEADER] * 51)
    assert (too_many.status_code, too_many.body) == (400, "invalid_blocks")
    assert _raw_post(url, b"{not json", "application/json") == (400, "invalid_payload")
    form = urllib.parse.urlencode({"payload": json.dumps({"text": "legacy form"})}).encode()
    assert _raw_post(url, form, "application/x-www-form-urlencoded") == (200, "ok")
    fake_slack.revoke_webhook(url)
    gone = hook.send(text="x")
    assert (gone.status_code, gone.body) == (404, "no_service")
    assert [m.text for m in fake_slack.messages("C0123")] == ["legacy form"]
    assert [r.error for r in fake_slack.requests_for(WEBHOOK)] == [
        "no_text",
        "invalid_blocks",
        "invalid_payload",
        None,
        "no_service",
    ]


def test_webhook_url_needs_a_known_channel(fake_slack: FakeSlack) -> None:
    with pytest.raises(LookupError, match="#nowhere"):
        fake_slack.webhook_url("#nowhere")


def test_webhook_rate_limit_is_retried(fake_slack: FakeSlack) -> None:
    fake_slack.rate_limit(WEBHOOK, count=1, retry_after=1)
    hook = WebhookClient(
        fake_slack.webhook_url("C0123"),
        timeout=5,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)],
    )
    started = time.monotonic()
    assert hook.send(text="after a 429").status_code == 200
    assert time.monotonic() - started >= 1.0
    assert [r.status for r in fake_slack.requests_for(WEBHOOK)] == [429, 200]


def test_webhook_5xx_without_retries(fake_slack: FakeSlack) -> None:
    fake_slack.fail(WEBHOOK, status=500)
    hook = WebhookClient(fake_slack.webhook_url("C0123"), timeout=5)
    assert hook.send(text="x").status_code == 500
    assert hook.send(text="x").status_code == 200
