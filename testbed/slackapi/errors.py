"""The error answers of the fake Slack, shaped as Slack shapes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ApiError(Exception):
    """A Web API call that Slack answers with ``{"ok": false, "error": ...}``.

    Slack answers most failures with HTTP 200; ``status`` is for the few that
    are not (404 for an unknown method).
    """

    def __init__(
        self,
        error: str,
        *,
        status: int = 200,
        errors: Sequence[str] = (),
        messages: Sequence[str] = (),
    ) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.errors = list(errors)
        self.messages = list(messages)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": False, "error": self.error}
        if self.errors:
            body["errors"] = self.errors
        if self.messages:
            body["response_metadata"] = {"messages": self.messages}
        return body


# An incoming webhook answers in plain text; these are its HTTP status codes
# (api.slack.com/changelog/2016-05-17-changes-to-errors-for-incoming-webhooks).
WEBHOOK_STATUS = {
    "invalid_payload": 400,
    "no_text": 400,
    "invalid_blocks": 400,
    "invalid_blocks_format": 400,
    "invalid_attachments": 400,
    "invalid_thread_ts": 400,
    "thread_not_found": 404,
    "action_prohibited": 403,
    "no_service": 404,
    "channel_not_found": 404,
    "channel_is_archived": 410,
}


class Throttled(Exception):
    """The call is over a rate limit: HTTP 429 with ``Retry-After`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"rate limited; retry after {retry_after}s")
        self.retry_after = retry_after
