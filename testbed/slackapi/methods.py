"""The Web API methods the fake answers, with Slack's arguments, results and errors.

Each method takes the call's arguments (already merged from the query string
and a form or JSON body) and returns the success body, or raises ``ApiError``
or ``Throttled``. Authentication and injected faults are checked before this.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from testbed.slackapi.content_limits import parse_content
from testbed.slackapi.errors import ApiError, Throttled
from testbed.slackapi.faults import ChannelPacer
from testbed.slackapi.workspace import (
    BOT_ID,
    BOT_USER_ID,
    TEAM_ID,
    Channel,
    Message,
    Workspace,
    valid_ts,
)

Handler = Callable[[dict[str, Any]], dict[str, Any]]
_MAX_LIMIT = 1000


def flag(value: Any) -> bool:
    """Slack's booleans: JSON ``true``, or ``true``/``1`` in a form (slack_sdk sends ``1``)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true")


def _page(items: list[Message], args: dict[str, Any], default: int) -> tuple[list[Message], str]:
    try:
        limit = int(args.get("limit") or default)
    except (TypeError, ValueError):
        raise ApiError("invalid_limit") from None
    limit = max(1, min(limit, _MAX_LIMIT))
    start = 0
    cursor = args.get("cursor")
    if cursor:
        try:
            start = int(base64.urlsafe_b64decode(str(cursor)).decode().removeprefix("offset:"))
        except (ValueError, binascii.Error):
            raise ApiError("invalid_cursor") from None
    page = items[start : start + limit]
    more = start + limit < len(items)
    next_cursor = (
        base64.urlsafe_b64encode(f"offset:{start + limit}".encode()).decode() if more else ""
    )
    return page, next_cursor


def _ts_bound(value: Any, default: float) -> float:
    if value in (None, ""):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ApiError("invalid_ts_latest" if default else "invalid_ts_oldest") from None


class WebApi:
    """Method name → handler, over one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        base_url: Callable[[], str],
        pacer: ChannelPacer | None = None,
    ) -> None:
        self.workspace = workspace
        self.pacer = pacer
        self._base_url = base_url
        self.handlers: dict[str, Handler] = {
            "api.test": lambda args: {"args": {k: v for k, v in args.items() if k != "token"}},
            "auth.test": self.auth_test,
            "chat.postMessage": self.post_message,
            "chat.update": self.update,
            "chat.delete": self.delete,
            "chat.getPermalink": self.permalink,
            "conversations.history": self.history,
            "conversations.replies": self.replies,
            "conversations.info": self.info,
        }

    def call(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        handler = self.handlers.get(method)
        if handler is None:
            raise ApiError("unknown_method", status=404)
        return {"ok": True, **handler(args)}

    def _postable(self, ref: Any) -> Channel:
        channel = self.workspace.channel(ref)
        if not channel.is_member:
            raise ApiError("not_in_channel")
        return channel

    def pace(self, channel: Channel) -> None:
        if self.pacer is not None:
            wait = self.pacer.admit(channel.id)
            if wait is not None:
                raise Throttled(wait)

    # -------------------------------------------------------------- methods
    def auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"{self._base_url()}/",
            "team": "GPU Guardian (fake)",
            "user": "gpu-guardian",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._postable(args.get("channel"))
        content = parse_content(args)
        self.pace(channel)
        message = self.workspace.post(
            channel,
            content,
            via="api",
            thread_ts=args.get("thread_ts"),
            reply_broadcast=flag(args.get("reply_broadcast", False)),
        )
        return {"channel": channel.id, "ts": message.ts, "message": Workspace.wire(message)}

    def update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        if not valid_ts(args.get("ts")):
            raise ApiError("message_not_found")
        current = self.workspace.message(channel, args["ts"])  # not found beats content errors
        # Slack keeps the blocks and attachments an update leaves out ([] removes them).
        merged = {"blocks": current.blocks, "attachments": current.attachments, **args}
        message = self.workspace.update(channel, args["ts"], parse_content(merged))
        return {
            "channel": channel.id,
            "ts": message.ts,
            "text": message.text,
            "message": Workspace.wire(message),
        }

    def delete(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        self.workspace.delete(channel, args.get("ts"))
        return {"channel": channel.id, "ts": args["ts"]}

    def permalink(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        message = self.workspace.message(channel, args.get("message_ts"))
        link = f"{self._base_url()}/archives/{channel.id}/p{message.ts.replace('.', '')}"
        if message.is_reply:
            link += f"?thread_ts={message.thread_ts}&cid={channel.id}"
        return {"channel": channel.id, "permalink": link}

    def history(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        oldest = _ts_bound(args.get("oldest"), 0.0)
        latest = _ts_bound(args.get("latest"), float("inf"))
        inclusive = flag(args.get("inclusive", False))
        shown = [
            m
            for m in self.workspace.history(channel)
            if (oldest <= float(m.ts) <= latest)
            and (inclusive or float(m.ts) not in (oldest, latest))
        ]
        page, cursor = _page(shown, args, 100)
        return {
            "messages": [Workspace.wire(m) for m in page],
            "has_more": bool(cursor),
            "pin_count": 0,
            "response_metadata": {"next_cursor": cursor},
        }

    def replies(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        page, cursor = _page(self.workspace.thread(channel, args.get("ts")), args, _MAX_LIMIT)
        return {
            "messages": [Workspace.wire(m) for m in page],
            "has_more": bool(cursor),
            "response_metadata": {"next_cursor": cursor},
        }

    def info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channel(args.get("channel"))
        return {
            "channel": {
                "id": channel.id,
                "name": channel.name,
                "is_channel": True,
                "is_member": channel.is_member,
                "is_archived": False,
            }
        }
