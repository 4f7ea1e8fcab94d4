"""Slack's ``block_actions`` interaction payload: the button a user pressed, on which
message. The same payload arrives over Socket Mode and over HTTP."""

from __future__ import annotations

from typing import Any

from guardian.engine.notify.click_plan import Click


def parse_click(payload: dict[str, Any]) -> Click | None:
    """The click in a ``block_actions`` payload (None: not a button of a message)."""
    actions = payload.get("actions") or []
    container = payload.get("container") or {}
    if not actions or container.get("type", "message") != "message":
        return None
    action = actions[0]
    channel = container.get("channel_id") or (payload.get("channel") or {}).get("id")
    ts = container.get("message_ts") or (payload.get("message") or {}).get("ts")
    user = (payload.get("user") or {}).get("id")
    if not (channel and ts and user and action.get("action_id")):
        return None
    return Click(
        str(action["action_id"]),
        str(action.get("value") or ""),
        str(user),
        str(channel),
        str(ts),
        float(action.get("action_ts") or 0.0),
    )
