"""Slack's HTTP framing: request bodies in, JSON or plain-text answers out."""

from __future__ import annotations

import dataclasses
import http
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from testbed.slackapi.errors import ApiError
from testbed.slackapi.faults import Fault


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str
    error: str | None = None
    retry_after: int | None = None


def json_reply(body: dict[str, Any], status: int = 200) -> Reply:
    error = None if body.get("ok") else str(body.get("error"))
    data = json.dumps(body).encode()
    return Reply(status, data, "application/json; charset=utf-8", error)


def text_reply(status: int, text: str, error: str | None = None) -> Reply:
    return Reply(status, text.encode(), "text/plain; charset=utf-8", error)


def fault_reply(fault: Fault, *, webhook: bool) -> Reply:
    if fault.status == 429:
        if webhook:
            reply = text_reply(429, "rate_limited", "ratelimited")
        else:
            reply = json_reply({"ok": False, "error": "ratelimited"}, 429)
        return dataclasses.replace(reply, retry_after=fault.retry_after or 1)
    # A 5xx comes from Slack's edge, not its API: a short non-JSON page.
    phrase = http.HTTPStatus(fault.status).phrase
    return text_reply(fault.status, f"{fault.status} {phrase}", fault.error)


def parse_body(content_type: str, raw: bytes) -> dict[str, Any]:
    if content_type.split(";")[0].strip().lower() == "application/json":
        try:
            parsed = json.loads(raw.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError):
            raise ApiError("invalid_json") from None
        if not isinstance(parsed, dict):
            raise ApiError("invalid_json")
        return parsed
    pairs = urllib.parse.parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return dict(pairs)
