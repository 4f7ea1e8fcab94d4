"""The fake Slack's Socket Mode and interactivity, against the real slack_sdk clients."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from testbed.slackapi import Channel, FakeSlack
from testbed.slackapi.interactions import sign

TOKEN = "xoxb-test"  # noqa: S105 - the fake workspace's tokens
APP_TOKEN = "xapp-test"  # noqa: S105
ALERTS = Channel("C0123", "gpu-alerts")
BLOCKS = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "idle"}},
    {
        "type": "actions",
        "block_id": "act",
        "elements": [
            {
                "type": "button",
                "action_id": "keep_4h",
                "text": {"type": "plain_text", "text": "Keep 4h"},
                "value": "episode-1",
            }
        ],
    },
]


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(
        tokens=[TOKEN], app_tokens=[APP_TOKEN], channels=[ALERTS], ack_timeout=0.5
    ) as slack:
        yield slack


@pytest.fixture
def web(fake: FakeSlack) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.api_base_url, timeout=5)


class _App:
    """A Socket Mode app that acks (or not) and keeps what it got."""

    def __init__(self, fake: FakeSlack, *, ack: bool = True) -> None:
        self.got: list[SocketModeRequest] = []
        self.ack = ack
        self.client = SocketModeClient(
            app_token=APP_TOKEN, web_client=WebClient(base_url=fake.api_base_url)
        )
        self.client.socket_mode_request_listeners.append(self._on)
        self.client.connect()

    def _on(self, client: BaseSocketModeClient, request: SocketModeRequest) -> None:
        self.got.append(request)
        if self.ack:
            client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    def close(self) -> None:
        self.client.close()


def _post(web: WebClient) -> str:
    return str(web.chat_postMessage(channel=ALERTS.id, text="idle", blocks=BLOCKS)["ts"])


def test_a_click_arrives_as_a_block_actions_envelope_and_is_acked(
    fake: FakeSlack, web: WebClient
) -> None:
    ts = _post(web)
    app = _App(fake)
    try:
        assert fake.socket_mode.wait_connected()
        delivery = fake.click("U0ALICE", ALERTS.id, ts, "keep_4h")
        assert delivery.wait_acked(5)
    finally:
        app.close()
    [request] = app.got
    assert request.type == "interactive"
    payload: dict[str, Any] = request.payload
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == "U0ALICE"
    assert payload["container"] == {
        "type": "message",
        "message_ts": ts,
        "channel_id": ALERTS.id,
        "is_ephemeral": False,
    }
    [action] = payload["actions"]
    assert (action["action_id"], action["value"], action["block_id"]) == (
        "keep_4h",
        "episode-1",
        "act",
    )
    assert delivery.attempts == 1


def test_an_unacked_envelope_is_sent_again_with_its_retry_attempt(
    fake: FakeSlack, web: WebClient
) -> None:
    ts = _post(web)
    app = _App(fake, ack=False)
    try:
        assert fake.socket_mode.wait_connected()
        delivery = fake.click("U0ALICE", ALERTS.id, ts, "keep_4h")
        deadline = time.monotonic() + 5
        while len(app.got) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        app.ack = True
        assert delivery.wait_acked(5)
    finally:
        app.close()
    ids = {r.envelope_id for r in app.got}
    assert len(ids) == 1
    assert delivery.attempts >= 2


def test_a_click_with_no_connection_waits_for_one(fake: FakeSlack, web: WebClient) -> None:
    ts = _post(web)
    delivery = fake.click("U0ALICE", ALERTS.id, ts, "keep_4h")
    assert not delivery.wait_acked(0.3)
    app = _App(fake)
    try:
        assert delivery.wait_acked(5)
    finally:
        app.close()


def test_disconnect_refresh_requested_reconnects_the_client(
    fake: FakeSlack, web: WebClient
) -> None:
    ts = _post(web)
    app = _App(fake)
    try:
        assert fake.socket_mode.wait_connected()
        fake.socket_mode.disconnect("refresh_requested", grace=0.2)
        deadline = time.monotonic() + 10
        while fake.socket_mode.connections_opened < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert fake.socket_mode.connections_opened == 2
        assert fake.click("U0ALICE", ALERTS.id, ts, "keep_4h").wait_acked(10)
    finally:
        app.close()


def test_apps_connections_open_needs_an_app_level_token(fake: FakeSlack, web: WebClient) -> None:
    with pytest.raises(SlackApiError) as bot:
        web.apps_connections_open(app_token=TOKEN)
    assert bot.value.response["error"] == "not_allowed_token_type"
    with pytest.raises(SlackApiError) as unknown:
        web.apps_connections_open(app_token="xapp-nope")  # noqa: S106 - unknown on purpose
    assert unknown.value.response["error"] == "invalid_auth"
    url = web.apps_connections_open(app_token=APP_TOKEN)["url"]
    assert url.startswith("ws://127.0.0.1:")


def test_only_a_button_on_the_message_can_be_pressed(fake: FakeSlack, web: WebClient) -> None:
    ts = _post(web)
    with pytest.raises(LookupError, match="no button 'restore'"):
        fake.click("U0ALICE", ALERTS.id, ts, "restore")


def test_ephemeral_answers_response_urls_and_user_groups(fake: FakeSlack, web: WebClient) -> None:
    ts = _post(web)
    web.chat_postEphemeral(channel=ALERTS.id, user="U0ALICE", text="not allowed")
    payload = fake.people.block_actions(fake.url, ALERTS.id, ts, "keep_4h", "U0BOB")
    request = urllib.request.Request(  # noqa: S310 - the fake's loopback URL
        payload["response_url"],
        data=json.dumps({"text": "done", "response_type": "ephemeral"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
        assert response.status == 200
    assert [(e.user, e.text, e.via) for e in fake.ephemerals()] == [
        ("U0ALICE", "not allowed", "api"),
        ("U0BOB", "done", "response_url"),
    ]
    fake.add_usergroup("S0ONCALL", ["U0BOB"])
    assert web.usergroups_users_list(usergroup="S0ONCALL")["users"] == ["U0BOB"]


def test_signed_interactivity_requests_verify_with_slack_sdk(
    fake: FakeSlack, web: WebClient
) -> None:
    ts = _post(web)
    got: list[tuple[bytes, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((body, dict(self.headers.items())))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/slack"
        assert fake.click_http(url, "s3cret", "U0ALICE", ALERTS.id, ts, "keep_4h")[0] == 200
        fake.click_http(url, "s3cret", "U0ALICE", ALERTS.id, ts, "keep_4h", tamper=True)
    finally:
        server.shutdown()
        server.server_close()
    verifier = SignatureVerifier("s3cret")
    good, tampered = got
    assert verifier.is_valid_request(*good)
    assert not verifier.is_valid_request(*tampered)
    assert good[1]["X-Slack-Signature"] == sign(
        "s3cret", good[1]["X-Slack-Request-Timestamp"], good[0]
    )
    assert b"block_actions" in good[0]
