"""The fake Slack answers bad calls with Slack's own error codes."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from testbed.slackapi import FakeSlack
from tests.integration.testbed.slack_fixtures import (  # noqa: F401 - fixtures
    fake_slack_fixture,
    slack_client_fixture,
)

WRONG_TOKEN = "xoxb-wrong"  # noqa: S105 - a token the fake does not know


def _error(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(SlackApiError) as raised:
        call(*args, **kwargs)
    response = raised.value.response
    return response.status_code, response.data  # type: ignore[return-value]


def _sections(count: int) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": f"s{i}"}} for i in range(count)]


def test_wrong_or_missing_token(fake_slack: FakeSlack) -> None:
    wrong = WebClient(token=WRONG_TOKEN, base_url=fake_slack.api_base_url, timeout=5)
    assert _error(wrong.auth_test) == (200, {"ok": False, "error": "invalid_auth"})
    assert _error(wrong.chat_postMessage, channel="C0123", text="x")[1]["error"] == "invalid_auth"
    missing = WebClient(base_url=fake_slack.api_base_url, timeout=5)
    assert _error(missing.auth_test) == (200, {"ok": False, "error": "not_authed"})
    assert fake_slack.messages("C0123") == []


def test_auth_test_names_the_bot(slack_client: WebClient) -> None:
    me = slack_client.auth_test()
    assert (me["team_id"], me["user_id"], me["bot_id"]) == ("T000", "U0GUARDIAN", "B0GUARDIAN")


def test_block_count_limit(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    assert slack_client.chat_postMessage(channel="C0123", text="ok", blocks=_sections(50))["ok"]
    status, body = _error(
        slack_client.chat_postMessage, channel="C0123", text="x", blocks=_sections(51)
    )
    assert (status, body["error"]) == (200, "invalid_blocks")
    assert "no more than 50 items allowed [json-pointer:/blocks]" in body["errors"][0]
    assert body["response_metadata"]["messages"] == body["errors"]
    assert len(fake_slack.messages("C0123")) == 1


@pytest.mark.parametrize(
    ("block", "pointer"),
    [
        (
            {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}},
            "/blocks/0/text/text",
        ),
        ({"type": "header", "text": {"type": "mrkdwn", "text": "*h*"}}, "/blocks/0/text/type"),
        (
            {"type": "section", "text": {"type": "mrkdwn", "text": "s" * 3001}},
            "/blocks/0/text/text",
        ),
        (
            {"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11},
            "/blocks/0/fields",
        ),
        (
            {"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]},
            "/blocks/0/fields/0/text",
        ),
        ({"type": "divider", "block_id": "b" * 256}, "/blocks/0/block_id"),
        ({"type": "carousel"}, "/blocks/0/type"),
    ],
)
def test_block_limits(slack_client: WebClient, block: dict[str, Any], pointer: str) -> None:
    _, body = _error(slack_client.chat_postMessage, channel="C0123", text="x", blocks=[block])
    assert body["error"] == "invalid_blocks"
    assert body["errors"][0].endswith(f"[json-pointer:{pointer}]")


def test_limits_at_the_edge_are_accepted(slack_client: WebClient) -> None:
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": "h" * 150}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "s" * 3000}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2000}] * 10},
    ]
    assert slack_client.chat_postMessage(channel="C0123", text="edge", blocks=blocks)["ok"]


def test_update_checks_blocks_too(slack_client: WebClient) -> None:
    posted = slack_client.chat_postMessage(channel="C0123", text="x")
    _, body = _error(
        slack_client.chat_update, channel="C0123", ts=posted["ts"], text="y", blocks=_sections(51)
    )
    assert body["error"] == "invalid_blocks"


def test_no_text(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    # api_call skips slack_sdk's own missing-text warning, so the server's answer shows.
    _, body = _error(slack_client.api_call, "chat.postMessage", json={"channel": "C0123"})
    assert body["error"] == "no_text"
    _, body = _error(
        slack_client.api_call, "chat.postMessage", json={"channel": "C0123", "text": "  "}
    )
    assert body["error"] == "no_text"
    posted = slack_client.chat_postMessage(channel="C0123", text="x")
    _, body = _error(
        slack_client.api_call, "chat.update", json={"channel": "C0123", "ts": posted["ts"]}
    )
    assert body["error"] == "no_text"


def test_bad_block_json_in_a_form(slack_client: WebClient) -> None:
    _, body = _error(
        slack_client.api_call,
        "chat.postMessage",
        params={"channel": "C0123", "text": "x", "blocks": "[{not json"},
    )
    assert body["error"] == "invalid_blocks_format"


def test_message_not_found_after_delete(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    posted = slack_client.chat_postMessage(channel="C0123", text="firing")
    fake_slack.delete_message("gpu-alerts", posted["ts"])
    _, body = _error(slack_client.chat_update, channel="C0123", ts=posted["ts"], text="resolved")
    assert body["error"] == "message_not_found"
    assert fake_slack.messages("C0123") == []
    [deleted] = fake_slack.messages("C0123", include_deleted=True)
    assert deleted.deleted
    assert deleted.text == "firing"
    _, body = _error(slack_client.chat_update, channel="C0123", ts="1.000001", text="x")
    assert body["error"] == "message_not_found"
    _, body = _error(slack_client.conversations_replies, channel="C0123", ts=posted["ts"])
    assert body["error"] == "thread_not_found"


def test_chat_delete(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    posted = slack_client.chat_postMessage(channel="C0123", text="x")
    assert slack_client.chat_delete(channel="C0123", ts=posted["ts"])["ts"] == posted["ts"]
    assert fake_slack.messages("C0123") == []
    _, body = _error(slack_client.chat_delete, channel="C0123", ts=posted["ts"])
    assert body["error"] == "message_not_found"


def test_unknown_method(slack_client: WebClient) -> None:
    status, body = _error(slack_client.api_call, "chat.teleport", json={"channel": "C0123"})
    assert (status, body["error"]) == (404, "unknown_method")


def test_token_is_never_logged(
    fake_slack: FakeSlack, slack_client: WebClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="testbed")  # the fake's own logger
    slack_client.chat_postMessage(channel="C0123", text="x")
    _error(WebClient(token=WRONG_TOKEN, base_url=fake_slack.api_base_url).auth_test)
    assert caplog.records, "the fake logs each request at debug level"
    assert "xoxb-" not in caplog.text
