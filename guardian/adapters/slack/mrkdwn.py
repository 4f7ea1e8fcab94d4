"""Slack text primitives: escaping, cutting to a limit, dates, mentions, and the three
text blocks (header, section, context) the messages are made of."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

MAX_HEADER = 150
MAX_SECTION = 3000

Block = dict[str, Any]


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn and text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def date(ts: float) -> str:
    """A date Slack shows in the reader's time zone; the fallback is UTC."""
    utc = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(ts)}^{{date_short_pretty}} {{time}}|{utc}>"


def format_mentions(tokens: tuple[str, ...]) -> str:
    """``U123``/``W123`` → ``<@U123>``, ``S123`` → ``<!subteam^S123>``, ``here``/``channel``
    → ``<!here>``; ``<...>`` is kept; anything else is shown as text."""
    out = []
    for token in tokens:
        bare = token.removeprefix("@")
        if token.startswith("<") and token.endswith(">"):
            out.append(token)
        elif bare in ("here", "channel", "everyone"):
            out.append(f"<!{bare}>")
        elif bare[:1] in ("U", "W") and bare.isalnum() and bare.isupper():
            out.append(f"<@{bare}>")
        elif bare[:1] == "S" and bare.isalnum() and bare.isupper():
            out.append(f"<!subteam^{bare}>")
        else:
            out.append(escape(token))
    return " ".join(out)


def user(name: str) -> str:
    """A Slack user ID as a mention, anything else as text."""
    return f"<@{name}>" if name.isalnum() and name.isupper() else escape(name)


def header(text: str) -> Block:
    return {
        "type": "header",
        "text": {"type": "plain_text", "text": cut(text, MAX_HEADER), "emoji": True},
    }


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, MAX_SECTION)}}


def context(*parts: str) -> Block:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": cut(p, MAX_SECTION)} for p in parts[:10] if p],
    }
