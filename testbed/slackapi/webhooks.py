"""Incoming webhooks: POST a JSON payload to a secret URL, get ``ok`` in plain text.

A webhook is bound to one channel. Its messages cannot be updated or deleted
through the Web API (``cant_update_message``), and its errors are plain-text
bodies with 4xx codes, not JSON.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from testbed.slackapi.content_limits import parse_content
from testbed.slackapi.errors import WEBHOOK_STATUS, ApiError, Throttled
from testbed.slackapi.faults import WEBHOOK, Fault, Faults
from testbed.slackapi.methods import WebApi
from testbed.slackapi.wire import Reply, fault_reply, parse_body, text_reply
from testbed.slackapi.workspace import TEAM_ID


def _payload(content_type: str, raw: bytes) -> dict[str, Any]:
    if content_type.split(";")[0].strip().lower() == "application/json":
        return parse_body(content_type, raw)
    # A form post carries the JSON in a `payload` field.
    form = parse_body(content_type, raw)
    if "payload" not in form:
        raise ApiError("invalid_payload")
    return parse_body("application/json", str(form["payload"]).encode())


class Webhooks:
    """The workspace's incoming webhooks, keyed by URL path."""

    def __init__(self, api: WebApi, faults: Faults) -> None:
        self._api = api
        self._faults = faults
        self._lock = threading.Lock()
        self._hooks: dict[str, str] = {}  # path -> channel ID

    def register(self, channel_id: str) -> str:
        """A new hook into ``channel_id``; returns its path, ``/services/T…/B…/secret``."""
        with self._lock:
            path = f"/services/{TEAM_ID}/B{len(self._hooks) + 1:08d}/{secrets.token_urlsafe(18)}"
            self._hooks[path] = channel_id
            return path

    def revoke(self, path: str) -> None:
        with self._lock:
            self._hooks.pop(path, None)

    def handle(
        self, path: str, content_type: str, raw: bytes
    ) -> tuple[dict[str, Any] | None, Reply]:
        """Answer one webhook POST: the parsed payload (if any) and the reply."""
        with self._lock:
            channel_id = self._hooks.get(path)
        if channel_id is None:
            return None, text_reply(404, "no_service", "no_service")
        fault = self._faults.take(WEBHOOK)
        if fault is not None:
            return None, fault_reply(fault, webhook=True)
        try:
            payload = _payload(content_type, raw)
        except ApiError:
            return None, text_reply(400, "invalid_payload", "invalid_payload")
        workspace = self._api.workspace
        try:
            channel = workspace.channel(channel_id)
            content = parse_content(payload)
            self._api.pace(channel)
            workspace.post(channel, content, via="webhook", thread_ts=payload.get("thread_ts"))
        except ApiError as error:
            status = WEBHOOK_STATUS.get(error.error, 400)
            return payload, text_reply(status, error.error, error.error)
        except Throttled as throttled:
            return payload, fault_reply(Fault(429, throttled.retry_after), webhook=True)
        return payload, Reply(200, b"ok", "text/html", None)
