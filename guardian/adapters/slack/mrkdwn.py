"""Slack text primitives: escaping, cutting to a limit, dates, mentions, links, and the
three text blocks (header, section, context) the messages are made of.

Every string from outside (labels, annotations, the workload's own mention annotation,
error texts) goes through ``escape``, so it cannot ping anyone or become a link: Slack's
control sequences all start with ``<``. Mentions are made only from validated Slack IDs
(``format_mentions``), links only from an ``http(s)`` URL of our own configuration, with
the characters that could end the link early percent-encoded (``link``). The mrkdwn text
objects are ``verbatim``, so Slack does not turn a URL or a ``#name`` in the text into a
link of its own.
"""

from __future__ import annotations

import re
import urllib.parse
from datetime import UTC, datetime
from typing import Any

MAX_HEADER = 150
MAX_SECTION = 3000

Block = dict[str, Any]


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn and text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, ending in ``…`` when cut; never in the middle
    of an entity (``&amp;``) or of one of our ``<…>`` sequences."""
    if len(text) <= limit:
        return text
    kept = text[: limit - 1]
    amp = kept.rfind("&")
    if amp >= 0 and ";" not in kept[amp:]:
        kept = kept[:amp]
    if kept.rfind("<") > kept.rfind(">"):
        kept = kept[: kept.rfind("<")]
    return kept + "…"


def date(ts: float) -> str:
    """A date Slack shows in the reader's time zone; the fallback is UTC."""
    utc = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(ts)}^{{date_short_pretty}} {{time}}|{utc}>"


_USER = re.compile(r"[UW][A-Z0-9]+")
_GROUP = re.compile(r"S[A-Z0-9]+")
_READY = re.compile(r"<(@[UW][A-Z0-9]+|!subteam\^S[A-Z0-9]+|!here|!channel)(\|[^<>|]*)?>")
_BROADCAST = ("here", "channel")  # as docs/slack.md allows them; never @everyone


def mention(token: str) -> str | None:
    """``U…``/``W…`` → ``<@U…>``, ``S…`` → ``<!subteam^S…>``, ``here``/``channel`` →
    ``<!here>``/``<!channel>`` (each also with ``@`` or as ready-made ``<…>`` syntax);
    None for anything else (``everyone``, a name, a link), which is not shown."""
    ready = _READY.fullmatch(token)
    bare = ready.group(1).lstrip("@!").removeprefix("subteam^") if ready else token
    bare = bare.removeprefix("@")
    if bare in _BROADCAST:
        return f"<!{bare}>"
    if _USER.fullmatch(bare):
        return f"<@{bare}>"
    if _GROUP.fullmatch(bare):
        return f"<!subteam^{bare}>"
    return None


def format_mentions(tokens: tuple[str, ...]) -> str:
    """The valid mentions among ``tokens``, in order, each once."""
    found = (mention(t) for t in tokens)
    return " ".join(dict.fromkeys(m for m in found if m is not None))


def user(name: str) -> str:
    """A Slack user ID as a mention, anything else as text."""
    return f"<@{name}>" if _USER.fullmatch(name) else escape(name)


# Kept as they are in a link: what a URL needs, less what ends Slack's <url|label>.
_URL_SAFE = "/:?#[]@!$&'()*+,;=%-._~"


def link(url: str, label: str) -> str:
    """``<url|label>`` for an ``http(s)`` URL with a host; the URL's ``|``, ``<``, ``>``,
    spaces and other characters outside a URL's own are percent-encoded, so it cannot
    end the link early. Anything else is shown as text, never as a link."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return f"{escape(label)}: {escape(url)}"
    return f"<{escape(urllib.parse.quote(url, safe=_URL_SAFE))}|{escape(label)}>"


def header(text: str) -> Block:
    return {
        "type": "header",
        "text": {"type": "plain_text", "text": cut(text, MAX_HEADER), "emoji": True},
    }


def text(mrkdwn: str, limit: int = MAX_SECTION) -> Block:
    """A mrkdwn text object: only our own ``<…>`` sequences are parsed (``verbatim``)."""
    return {"type": "mrkdwn", "text": cut(mrkdwn, limit), "verbatim": True}


def section(mrkdwn: str) -> Block:
    return {"type": "section", "text": text(mrkdwn)}


def context(*parts: str) -> Block:
    return {"type": "context", "elements": [text(p) for p in parts[:10] if p]}
