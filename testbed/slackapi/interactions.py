"""People in the fake workspace: button clicks (``block_actions``), their ephemeral
answers, user groups, and signed HTTP interactivity requests.

A click is built from the message as the fake stores it: only a button that is really
on the message can be pressed, and its ``value`` is the one the app rendered. The
payload is Slack's ``block_actions`` shape; it goes out through Socket Mode (an
envelope) or, signed with the app's signing secret (v0, HMAC-SHA256 over
``v0:<timestamp>:<body>``), as a form POST to the app's Request URL.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.slackapi.errors import ApiError
from testbed.slackapi.socket_mode import APP_ID
from testbed.slackapi.workspace import TEAM_ID, Message, Workspace


@dataclass(frozen=True)
class Ephemeral:
    """A message only ``user`` sees (chat.postEphemeral, or a response_url answer)."""

    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    via: str  # "api" | "response_url"
    at: float


def find_button(message: Message, action_id: str) -> tuple[str, dict[str, Any]]:
    """The block_id and element of the button ``action_id`` on ``message``."""
    for block in message.blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements", []):
            if element.get("type") == "button" and element.get("action_id") == action_id:
                return str(block.get("block_id", "")), element
    shown = [
        e.get("action_id")
        for b in message.blocks
        if b.get("type") == "actions"
        for e in b.get("elements", [])
    ]
    raise LookupError(f"no button {action_id!r} on message {message.ts}; it has {shown}")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


class People:
    """User groups, ephemeral messages and response URLs of the fake workspace."""

    def __init__(self, workspace: Workspace, clock: Callable[[], float]) -> None:
        self.workspace = workspace
        self.clock = clock
        self.usergroups: dict[str, tuple[str, ...]] = {}
        self._ephemerals: list[Ephemeral] = []
        self._response_urls: dict[str, tuple[str, str]] = {}  # path -> (channel, user)
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    # -------------------------------------------------------------- Web API methods
    def post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        user = args.get("user")
        if not user:
            raise ApiError("user_not_in_channel")
        text = str(args.get("text") or "")
        blocks = args.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if not text and not blocks:
            raise ApiError("no_text")
        self._add(Ephemeral(channel.id, str(user), text, list(blocks), "api", self.clock()))
        return {"message_ts": f"{self.clock():.6f}"}

    def usergroup_users(self, args: dict[str, Any]) -> dict[str, Any]:
        group = args.get("usergroup")
        if group not in self.usergroups:
            raise ApiError("no_such_subteam")
        return {"users": list(self.usergroups[str(group)])}

    # -------------------------------------------------------------- response_url
    def response_url(self, base: str, channel: str, user: str) -> str:
        secret = hashlib.sha256(f"{channel}:{user}".encode()).hexdigest()[:12]
        path = f"/actions/{TEAM_ID}/{next(self._numbers)}/{secret}"
        with self._lock:
            self._response_urls[path] = (channel, user)
        return base + path

    def respond(self, path: str, raw: bytes) -> tuple[int, str]:
        with self._lock:
            target = self._response_urls.get(path)
        if target is None:
            return 404, "no_service"
        try:
            body = json.loads(raw.decode() or "{}")
        except (UnicodeDecodeError, ValueError):
            return 400, "invalid_payload"
        channel, user = target
        text = str(body.get("text") or "")
        self._add(
            Ephemeral(
                channel, user, text, list(body.get("blocks") or []), "response_url", self.clock()
            )
        )
        return 200, "ok"

    def _add(self, message: Ephemeral) -> None:
        with self._lock:
            self._ephemerals.append(message)

    def ephemerals(self, user: str | None = None) -> list[Ephemeral]:
        with self._lock:
            return [e for e in self._ephemerals if user is None or e.user == user]

    # -------------------------------------------------------------- clicks
    def block_actions(
        self, base: str, channel_ref: str, ts: str, action_id: str, user: str
    ) -> dict[str, Any]:
        """The payload Slack sends when ``user`` presses ``action_id`` on message ``ts``."""
        channel = self.workspace.channel(channel_ref)
        message = self.workspace.message(channel, ts)
        block_id, button = find_button(message, action_id)
        action_ts = f"{self.clock():.6f}"
        return {
            "type": "block_actions",
            "user": {
                "id": user,
                "username": user.lower(),
                "name": user.lower(),
                "team_id": TEAM_ID,
            },
            "api_app_id": APP_ID,
            "token": "fake-verification-token",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": channel.id,
                "is_ephemeral": False,
            },
            "trigger_id": f"{next(self._numbers)}.{action_ts.replace('.', '')}",
            "team": {"id": TEAM_ID, "domain": "fake"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel.id, "name": channel.name},
            "message": Workspace.wire(message),
            "state": {"values": {}},
            "response_url": self.response_url(base, channel.id, user),
            "actions": [
                {
                    "action_id": action_id,
                    "block_id": block_id,
                    "text": button.get("text", {}),
                    "value": button.get("value", ""),
                    "type": "button",
                    "action_ts": action_ts,
                }
            ],
        }


def post_signed(
    url: str,
    payload: dict[str, Any],
    secret: str,
    *,
    timestamp: float,
    tamper: bool = False,
    timeout: float = 10.0,
) -> tuple[int, bytes]:
    """POST ``payload`` as Slack does to an interactivity Request URL; ``tamper`` changes
    the body after signing. Returns (HTTP status, body)."""
    body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    stamp = str(int(timestamp))
    signature = sign(secret, stamp, body)
    if tamper:
        body += b"x"
    request = urllib.request.Request(  # noqa: S310 - the test's own loopback URL
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
