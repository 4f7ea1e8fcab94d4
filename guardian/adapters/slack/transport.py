"""Slack over the wire: the Web API (bot token) and incoming webhooks, with errors sorted
by whether a retry can help and whether the message may have arrived anyway.

slack_sdk's ``RateLimitErrorRetryHandler`` honours ``Retry-After`` inside the call; when
its retries run out the 429 reaches the outbox queue, which waits ``Retry-After`` for
that channel. No connection-error retry handler is installed on purpose: a reset after
Slack accepted a post would re-post it blind. The outbox retries instead, after
reconciling (see ``find``). Secrets (the token, a webhook URL) never reach a log line or
an exception message: every error text passes through ``Secrets.scrub``, which also
knows a webhook URL's path (its secret part) on its own.
"""

from __future__ import annotations

import logging
import re
import urllib.error
from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from guardian_common.errors import PermanentError, TransientError
from guardian_common.redact import RedactFilter, Secrets
from guardian_common.redact import Secret as Secret  # the settings build one; re-exported

logger = logging.getLogger(__name__)

# Slack errors where retrying later can work: the workspace or token may be fixed meanwhile.
_AUTH_ERRORS = frozenset(
    {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
     "no_permission", "ekm_access_denied", "team_access_not_granted"}
)  # fmt: skip
_SERVER_ERRORS = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
_GONE = frozenset({"message_not_found", "thread_not_found", "cant_update_message"})
# conversations.* needs a channel ID (a name gives channel_not_found) and a history scope.
_NO_HISTORY = frozenset(
    {"missing_scope", "not_in_channel", "not_allowed_token_type", "channel_not_found"}
)


def _sdk_logger(secrets: Secrets, name: str) -> logging.Logger:
    """A logger for slack_sdk that scrubs the secret: WebhookClient logs its URL (the
    secret) at debug level. Unregistered, so the filter is ours alone; records still reach
    the handlers above this module's logger."""
    sdk = logging.Logger(f"{__name__}.{name}")  # noqa: LOG001 - private on purpose
    sdk.parent = logger
    sdk.addFilter(RedactFilter(secrets))
    sdk.addFilter(_UploadUrlFilter())
    return sdk


_UPLOAD_URL = re.compile(r"(/upload/v1/)[^\s'\",}]+")


class _UploadUrlFilter(logging.Filter):
    """An upload URL (files.getUploadURLExternal) is a credential for its file: slack_sdk
    logs it at debug level, we do not."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _UPLOAD_URL.sub(r"\1<redacted>", str(record.msg))
        return True


class RateLimited(TransientError):
    """Slack said 429: nothing was delivered; wait ``delay`` seconds on this channel."""


class Uncertain(TransientError):
    """5xx, timeout or a broken connection: the message may or may not have arrived."""


class Unauthorized(TransientError):
    """The token is refused: keep everything queued until it is fixed."""


class MessageGone(PermanentError):
    """The parent message no longer exists (deleted, or cannot be edited)."""


class Rejected(PermanentError):
    """Slack refuses this message for good (unknown channel, invalid blocks, ...)."""


class CannotReconcile(PermanentError):
    """History cannot be read (missing ``channels:history``, or webhook mode)."""


@dataclass(frozen=True)
class Sent:
    channel_id: str | None
    ts: str | None


@dataclass(frozen=True)
class FileUpload:
    """One file to share in a channel (``channel_id``: an ID, Slack refuses a name), as a
    reply in ``thread_ts``'s thread when given, introduced by ``initial_comment``."""

    channel_id: str
    thread_ts: str | None
    filename: str
    title: str
    content: bytes
    alt_txt: str | None = None
    initial_comment: str | None = None


class Transport(Protocol):
    can_update: bool

    def post(self, channel: str, payload: dict[str, Any], thread_ts: str | None) -> Sent: ...

    def update(self, channel_id: str, ts: str, payload: dict[str, Any]) -> Sent: ...

    def find(self, channel: str, marker: str, oldest: float, thread_ts: str | None) -> Sent | None:
        """The message carrying block_id ``marker`` posted since ``oldest``, if any."""
        ...

    def upload(self, upload: FileUpload) -> str:
        """Upload and share a file; its Slack file ID."""
        ...


def _retry_after(headers: Any) -> float:
    try:
        return max(0.0, float(headers.get("Retry-After") or headers.get("retry-after") or 1))
    except (TypeError, ValueError, AttributeError):
        return 1.0


class WebApiTransport:
    can_update = True

    def __init__(
        self,
        token: Secret,
        *,
        base_url: str = "https://slack.com/api/",
        timeout: float = 30.0,
        rate_limit_retries: int = 1,
    ) -> None:
        self._secrets = Secrets(token)
        self._client = WebClient(
            token=token.reveal(),
            base_url=base_url,
            timeout=int(max(1, timeout)),
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)],
            logger=_sdk_logger(self._secrets, "web"),
        )

    def _call(self, method: str, **kwargs: Any) -> Any:
        try:
            return self._client.api_call(method, json=kwargs)
        except SlackApiError as exc:
            raise self._classify(method, exc) from None
        except Exception as exc:
            text = self._secrets.scrub(f"{type(exc).__name__}: {exc}")
            raise Uncertain(f"{method}: {text}") from None

    def _classify(self, method: str, exc: SlackApiError) -> Exception:
        response = exc.response
        status = int(getattr(response, "status_code", 0) or 0)
        error = ""
        if isinstance(response.data, dict):
            error = str(response.data.get("error") or "")
        text = self._secrets.scrub(f"{method}: HTTP {status} {error}".strip())
        if status == 429 or error == "ratelimited":
            return RateLimited(text, delay=_retry_after(response.headers))
        if status >= 500 or error in _SERVER_ERRORS:
            return Uncertain(text)
        if error in _AUTH_ERRORS:
            return Unauthorized(text)
        if error in _GONE:
            return MessageGone(text)
        if error in _NO_HISTORY and method.startswith("conversations."):
            return CannotReconcile(text)
        return Rejected(text)

    def post(self, channel: str, payload: dict[str, Any], thread_ts: str | None) -> Sent:
        args = dict(payload, channel=channel, unfurl_links=False, unfurl_media=False)
        if thread_ts:
            args["thread_ts"] = thread_ts
        response = self._call("chat.postMessage", **args)
        return Sent(response.get("channel"), response.get("ts"))

    def update(self, channel_id: str, ts: str, payload: dict[str, Any]) -> Sent:
        response = self._call("chat.update", channel=channel_id, ts=ts, **payload)
        return Sent(response.get("channel"), response.get("ts"))

    def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        """A message only ``user`` sees (answers to their clicks)."""
        self._call("chat.postEphemeral", channel=channel, user=user, text=text)

    def usergroup_members(self, group: str) -> tuple[str, ...]:
        """The users of a user group (``usergroups:read``)."""
        response = self._client_get("usergroups.users.list", {"usergroup": group})
        return tuple(str(u) for u in response.get("users") or [])

    def find(self, channel: str, marker: str, oldest: float, thread_ts: str | None) -> Sent | None:
        method = "conversations.replies" if thread_ts else "conversations.history"
        cursor = None
        for _ in range(10):  # at most 2,000 messages back; the crash window is seconds
            args: dict[str, Any] = {"channel": channel, "oldest": f"{oldest:.6f}", "limit": 200}
            if thread_ts:
                args["ts"] = thread_ts
            if cursor:
                args["cursor"] = cursor
            response = self._client_get(method, args)
            for message in response.get("messages") or []:
                blocks = message.get("blocks") or []
                if any(b.get("block_id") == marker for b in blocks if isinstance(b, dict)):
                    return Sent(channel, str(message.get("ts")))
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def upload(self, upload: FileUpload) -> str:
        """Slack's three steps (files.getUploadURLExternal, the bytes to the upload URL,
        files.completeUploadExternal); needs ``files:write``. Uncertain after the last step
        began means the file may be shared already: a retry can share it twice."""
        method = "files.upload_v2"
        try:
            response = self._client.files_upload_v2(
                channel=upload.channel_id,
                thread_ts=upload.thread_ts,
                content=upload.content,
                filename=upload.filename,
                title=upload.title,
                alt_txt=upload.alt_txt,
                initial_comment=upload.initial_comment,
            )
        except SlackApiError as exc:
            raise self._classify(method, exc) from None
        except urllib.error.HTTPError as exc:  # the upload URL answered non-2xx
            exc.close()  # slack_sdk leaves the connection to us
            raise self._upload_refused(method, exc) from None
        except SlackRequestError as exc:  # slack_sdk refused it before sending (over 1 GB)
            raise Rejected(self._secrets.scrub(f"{method}: {exc}")) from None
        except Exception as exc:
            raise Uncertain(self._secrets.scrub(f"{method}: {type(exc).__name__}: {exc}")) from None
        shared = response.get("file") or (response.get("files") or [{}])[0]
        file_id = shared.get("id") if isinstance(shared, dict) else None
        if not file_id:
            raise Uncertain(f"{method}: Slack answered without a file id")
        return str(file_id)

    def _upload_refused(self, method: str, exc: urllib.error.HTTPError) -> Exception:
        # Never the URL (exc.url): it is the upload's credential while it lives.
        text = f"{method}: upload URL answered HTTP {exc.code}"
        if exc.code == 429:
            return RateLimited(text, delay=_retry_after(exc.headers))
        if exc.code >= 500:
            return Uncertain(text)
        return Rejected(text)

    def _client_get(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return self._client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as exc:
            raise self._classify(method, exc) from None
        except Exception as exc:
            raise Uncertain(self._secrets.scrub(f"{method}: {type(exc).__name__}: {exc}")) from None


class WebhookTransport:
    """Incoming webhook: posts only. It cannot update or thread (it never learns a ts), so
    every change is a new message; a crash between send and commit re-sends it."""

    can_update = False

    def __init__(self, url: Secret, *, timeout: float = 30.0, rate_limit_retries: int = 1) -> None:
        self._secrets = Secrets(url)
        self._client = WebhookClient(
            url.reveal(),
            timeout=int(max(1, timeout)),
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)],
            logger=_sdk_logger(self._secrets, "webhook"),
        )

    def post(self, channel: str, payload: dict[str, Any], thread_ts: str | None) -> Sent:
        try:
            response = self._client.send_dict(dict(payload, unfurl_links=False))
        except Exception as exc:
            raise Uncertain(self._secrets.scrub(f"webhook: {type(exc).__name__}: {exc}")) from None
        status, body = response.status_code, str(response.body or "")
        if status == 200:
            return Sent(None, None)
        text = self._secrets.scrub(f"webhook: HTTP {status} {body[:100]}")
        if status == 429:
            return self._raise(RateLimited(text, delay=_retry_after(response.headers)))
        if status >= 500:
            return self._raise(Uncertain(text))
        if status in (401, 403) or body in ("invalid_token", "action_prohibited"):
            return self._raise(Unauthorized(text))
        return self._raise(Rejected(text))

    @staticmethod
    def _raise(error: Exception) -> Sent:
        raise error

    def update(self, channel_id: str, ts: str, payload: dict[str, Any]) -> Sent:
        raise MessageGone("webhooks cannot update messages")

    def find(self, channel: str, marker: str, oldest: float, thread_ts: str | None) -> Sent | None:
        raise CannotReconcile("webhooks cannot read history")

    def upload(self, upload: FileUpload) -> str:
        raise Rejected("an incoming webhook cannot upload files; use a bot token")
