"""The fake Slack's messages, threads and edits, driven by the real slack_sdk WebClient."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import urllib.request

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from testbed.slackapi import Channel, FakeSlack
from tests.integration.testbed.slack_fixtures import (  # noqa: F401 - fixtures
    ALERTS,
    TOKEN,
    fake_slack_fixture,
    slack_client_fixture,
)

TS = re.compile(r"^\d{10}\.\d{6}$")
HEADER = {"type": "header", "text": {"type": "plain_text", "text": "GPU idle"}}


def _section(text: str) -> dict[str, object]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_post_update_and_thread(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    posted = slack_client.chat_postMessage(
        channel="#gpu-alerts", text="GPU idle: train-7", blocks=[HEADER, _section("firing")]
    )
    assert posted["ok"]
    assert posted["channel"] == "C0123"
    assert TS.match(posted["ts"])
    assert posted["message"]["text"] == "GPU idle: train-7"
    assert posted["message"]["blocks"][0] == HEADER

    reply = slack_client.chat_postMessage(channel="C0123", text="grace", thread_ts=posted["ts"])
    assert reply["message"]["thread_ts"] == posted["ts"]
    second = slack_client.chat_postMessage(channel="C0123", text="reclaimed", thread_ts=reply["ts"])
    assert second["message"]["thread_ts"] == posted["ts"], "a reply to a reply joins the thread"
    assert posted["ts"] < reply["ts"] < second["ts"]

    updated = slack_client.chat_update(
        channel=posted["channel"], ts=posted["ts"], text="reclaimed: train-7"
    )
    assert (updated["ts"], updated["text"]) == (posted["ts"], "reclaimed: train-7")
    assert "edited" in updated["message"]
    assert updated["message"]["blocks"][0] == HEADER, "blocks left out of an update are kept"

    [parent] = fake_slack.messages("gpu-alerts")
    assert (parent.ts, parent.text, parent.update_count) == (posted["ts"], "reclaimed: train-7", 1)
    assert parent.edits[0].text == "GPU idle: train-7"
    assert [r.text for r in parent.replies] == ["grace", "reclaimed"]
    assert all(r.thread_ts == parent.ts for r in parent.replies)

    thread = slack_client.conversations_replies(channel="C0123", ts=posted["ts"])
    assert [m["text"] for m in thread["messages"]] == ["reclaimed: train-7", "grace", "reclaimed"]
    assert thread["messages"][0]["reply_count"] == 2
    history = slack_client.conversations_history(channel="C0123")
    assert [m["ts"] for m in history["messages"]] == [posted["ts"]]


def test_update_with_empty_blocks_removes_them(slack_client: WebClient) -> None:
    posted = slack_client.chat_postMessage(channel="C0123", text="t", blocks=[HEADER])
    updated = slack_client.chat_update(channel="C0123", ts=posted["ts"], text="t2", blocks=[])
    assert "blocks" not in updated["message"]


def test_reply_broadcast_shows_in_history(slack_client: WebClient) -> None:
    parent = slack_client.chat_postMessage(channel="C0123", text="parent")
    slack_client.chat_postMessage(channel="C0123", text="quiet", thread_ts=parent["ts"])
    loud = slack_client.chat_postMessage(
        channel="C0123", text="restored", thread_ts=parent["ts"], reply_broadcast=True
    )
    history = slack_client.conversations_history(channel="C0123")["messages"]
    assert [m["text"] for m in history] == ["restored", "parent"]
    assert (history[0]["subtype"], history[0]["ts"]) == ("thread_broadcast", loud["ts"])


def test_channels_by_id_or_name_and_membership(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    for ref in ("C0123", "gpu-alerts", "#gpu-alerts"):
        assert slack_client.chat_postMessage(channel=ref, text=ref)["channel"] == "C0123"
    assert [m.text for m in fake_slack.messages("#gpu-alerts")] == [
        "C0123",
        "gpu-alerts",
        "#gpu-alerts",
    ]
    with pytest.raises(SlackApiError) as unknown:
        slack_client.chat_postMessage(channel="#nowhere", text="x")
    assert unknown.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as outside:
        slack_client.chat_postMessage(channel="finance", text="x")
    assert outside.value.response["error"] == "not_in_channel"
    fake_slack.add_channel(Channel("C0999", "finance", is_member=True))
    assert slack_client.chat_postMessage(channel="finance", text="x")["ok"]


def test_thread_ts_checks(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    with pytest.raises(SlackApiError) as bad:
        slack_client.chat_postMessage(channel="C0123", text="x", thread_ts="yesterday")
    assert bad.value.response["error"] == "invalid_thread_ts"
    # Slack accepts a reply to a ts it does not know, and shows it nowhere.
    lost = slack_client.chat_postMessage(
        channel="C0123", text="lost", thread_ts="1600000000.000001"
    )
    assert lost["ok"]
    assert fake_slack.messages("C0123") == []
    assert [m.text for m in fake_slack.orphan_replies("C0123")] == ["lost"]
    parent = slack_client.chat_postMessage(channel="C0123", text="parent")
    fake_slack.delete_message("C0123", parent["ts"])
    with pytest.raises(SlackApiError) as gone:
        slack_client.chat_postMessage(channel="C0123", text="x", thread_ts=parent["ts"])
    assert gone.value.response["error"] == "thread_not_found"


def test_form_encoded_calls_and_token_in_body(fake_slack: FakeSlack) -> None:
    """Slack also takes form bodies with ``blocks`` as a JSON string and the token as a field."""
    form = {
        "token": TOKEN,
        "channel": "C0123",
        "text": "from a form",
        "blocks": json.dumps([HEADER]),
        "reply_broadcast": "false",
    }
    request = urllib.request.Request(  # noqa: S310 - loopback http
        f"{fake_slack.api_base_url}chat.postMessage",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
        body = json.load(response)
    assert body["ok"], body
    [message] = fake_slack.messages("C0123")
    assert (message.text, message.blocks) == ("from a form", [HEADER])


def test_permalink_and_history_paging(slack_client: WebClient) -> None:
    posted = [slack_client.chat_postMessage(channel="C0123", text=str(i))["ts"] for i in range(5)]
    link = slack_client.chat_getPermalink(channel="C0123", message_ts=posted[0])["permalink"]
    assert link.endswith(f"/archives/C0123/p{posted[0].replace('.', '')}")
    seen: list[str] = []
    for page in slack_client.conversations_history(channel="C0123", limit=2):
        seen += [m["text"] for m in page["messages"]]
    assert seen == ["4", "3", "2", "1", "0"]
    window = slack_client.conversations_history(
        channel="C0123", oldest=posted[1], latest=posted[3], inclusive=True
    )
    assert [m["text"] for m in window["messages"]] == ["3", "2", "1"]


def test_ts_increases_and_requests_use_the_injected_clock() -> None:
    frozen = 1_700_000_000.0
    with FakeSlack.start(clock=lambda: frozen) as fake:
        client = WebClient(token=TOKEN, base_url=fake.api_base_url, timeout=5)
        stamps = [client.chat_postMessage(channel="C0123", text="x")["ts"] for _ in range(3)]
        assert stamps == ["1700000000.000000", "1700000000.000001", "1700000000.000002"]
        [first, *_] = fake.requests
        assert (first.method, first.received_at) == ("chat.postMessage", frozen)
        assert first.headers["Authorization"] == f"Bearer {TOKEN}"
        assert first.body is not None
        assert first.body["text"] == "x"
        assert (first.status, first.error) == (200, None)


def test_concurrent_posts_are_all_kept(fake_slack: FakeSlack) -> None:
    client = WebClient(token=TOKEN, base_url=fake_slack.api_base_url, timeout=10)
    stamps: list[str] = []
    lock = threading.Lock()

    def post(worker: int) -> None:
        for i in range(10):
            ts = client.chat_postMessage(channel=ALERTS.id, text=f"{worker}-{i}")["ts"]
            with lock:
                stamps.append(ts)

    workers = [threading.Thread(target=post, args=(n,)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    messages = fake_slack.messages(ALERTS.id)
    assert len(set(stamps)) == len(messages) == 60
    assert [m.ts for m in messages] == sorted(stamps)
