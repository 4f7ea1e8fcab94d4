"""The fake workspace's state: channels, messages, threads and edits.

Everything here runs under one lock, because the HTTP server answers each
request on its own thread. Readers get frozen snapshots, never live state.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from testbed.slackapi.content_limits import Content
from testbed.slackapi.errors import ApiError

Via = Literal["api", "webhook"]

TEAM_ID = "T000"
BOT_USER_ID = "U0GUARDIAN"
BOT_ID = "B0GUARDIAN"
WEBHOOK_BOT_ID = "B0WEBHOOK"
_TS = re.compile(r"^\d{1,12}\.\d{6}$")


@dataclass(frozen=True)
class Channel:
    """A conversation. The bot can post only where it ``is_member``."""

    id: str
    name: str
    is_member: bool = True


@dataclass(frozen=True)
class Revision:
    """A message's content before an edit replaced it."""

    text: str
    blocks: list[dict[str, Any]]
    replaced_at: float


@dataclass(frozen=True)
class Message:
    """A snapshot of one message, with its thread (for parents) and its edit history."""

    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    attachments: list[dict[str, Any]]
    via: Via
    posted_at: float
    thread_ts: str | None = None
    reply_broadcast: bool = False
    deleted: bool = False
    edits: tuple[Revision, ...] = ()
    edited_ts: str | None = None
    replies: tuple[Message, ...] = ()
    files: tuple[dict[str, Any], ...] = ()  # a file share's files, as the Web API shows them

    @property
    def update_count(self) -> int:
        return len(self.edits)

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts


@dataclass
class _Stored:
    channel: str
    ts: str
    content: Content
    via: Via
    posted_at: float
    parent: str | None
    reply_broadcast: bool
    deleted: bool = False
    edits: list[Revision] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    edited_ts: str | None = None
    files: tuple[dict[str, Any], ...] = ()


def valid_ts(value: Any) -> bool:
    return isinstance(value, str) and _TS.match(value) is not None


class Workspace:
    """Channels and their messages. ``clock`` gives epoch seconds for ``ts`` values."""

    def __init__(self, channels: Iterable[Channel], clock: Callable[[], float]) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self._channels: dict[str, Channel] = {}
        self._messages: dict[tuple[str, str], _Stored] = {}
        self._order: dict[str, list[str]] = {}  # channel ID -> parent ts, oldest first
        self._orphans: dict[str, list[str]] = {}
        self._last_micros = 0
        for channel in channels:
            self.add_channel(channel)

    # -------------------------------------------------------------- channels
    def add_channel(self, channel: Channel) -> None:
        with self._lock:
            self._channels[channel.id] = channel
            self._order.setdefault(channel.id, [])
            self._orphans.setdefault(channel.id, [])

    def channel(self, ref: Any) -> Channel:
        """Find a channel by ID (``C0123``) or name (``gpu-alerts`` or ``#gpu-alerts``)."""
        if not isinstance(ref, str) or not ref:
            raise ApiError("channel_not_found")
        with self._lock:
            if ref in self._channels:
                return self._channels[ref]
            name = ref.removeprefix("#")
            for channel in self._channels.values():
                if channel.name == name:
                    return channel
        raise ApiError("channel_not_found")

    # -------------------------------------------------------------- writes
    def _next_ts(self) -> str:
        # Slack's ts is epoch seconds with microseconds, unique per channel;
        # ours is unique and strictly increasing across the whole workspace.
        micros = max(self._last_micros + 1, int(self._clock() * 1_000_000))
        self._last_micros = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def post(
        self,
        channel: Channel,
        content: Content,
        *,
        via: Via,
        thread_ts: Any = None,
        reply_broadcast: bool = False,
        files: tuple[dict[str, Any], ...] = (),
    ) -> Message:
        with self._lock:
            parent = self._thread_parent(channel, thread_ts)
            ts = self._next_ts()
            stored = _Stored(
                channel=channel.id,
                ts=ts,
                content=content,
                via=via,
                posted_at=self._clock(),
                parent=parent if parent is not None else (thread_ts or None),
                reply_broadcast=reply_broadcast and thread_ts is not None,
                files=copy.deepcopy(files),
            )
            self._messages[(channel.id, ts)] = stored
            if parent is not None:
                self._messages[(channel.id, parent)].replies.append(ts)
            elif thread_ts:
                # Slack accepts a reply to a ts it does not know and shows it nowhere.
                self._orphans[channel.id].append(ts)
            else:
                self._order[channel.id].append(ts)
            return self._snapshot(stored)

    def _thread_parent(self, channel: Channel, thread_ts: Any) -> str | None:
        if thread_ts is None or thread_ts == "":
            return None
        if not valid_ts(thread_ts):
            raise ApiError("invalid_thread_ts", messages=[f"[ERROR] {thread_ts} is not valid"])
        target = self._messages.get((channel.id, thread_ts))
        if target is None:
            return None
        if target.deleted:
            raise ApiError("thread_not_found")
        # A reply to a reply lands in the parent's thread.
        return target.parent or target.ts

    def update(self, channel: Channel, ts: Any, content: Content) -> Message:
        with self._lock:
            stored = self._live(channel, ts)
            if stored.via == "webhook":
                raise ApiError("cant_update_message")
            now = self._clock()
            stored.edits.append(Revision(stored.content.text, stored.content.blocks, now))
            stored.content = content
            stored.edited_ts = self._next_ts()
            return self._snapshot(stored)

    def delete(self, channel: Channel, ts: Any, *, via_api: bool = True) -> None:
        with self._lock:
            stored = self._live(channel, ts)
            if via_api and stored.via == "webhook":
                raise ApiError("cant_delete_message")
            stored.deleted = True

    def _live(self, channel: Channel, ts: Any) -> _Stored:
        stored = self._messages.get((channel.id, ts)) if isinstance(ts, str) else None
        if stored is None or stored.deleted:
            raise ApiError("message_not_found")
        return stored

    # -------------------------------------------------------------- reads
    def message(self, channel: Channel, ts: Any) -> Message:
        with self._lock:
            return self._snapshot(self._live(channel, ts))

    def thread(self, channel: Channel, ts: Any) -> list[Message]:
        """The parent and its replies, oldest first (``conversations.replies``)."""
        with self._lock:
            stored = self._messages.get((channel.id, ts)) if isinstance(ts, str) else None
            if stored is None or stored.deleted:
                raise ApiError("thread_not_found")
            parent = self._messages.get((channel.id, stored.parent or stored.ts))
            if parent is None:  # an orphan reply is its own thread
                return [self._snapshot(stored)]
            replies = [self._messages[(channel.id, r)] for r in parent.replies]
            return [self._snapshot(m) for m in [parent, *replies] if not m.deleted]

    def history(self, channel: Channel) -> list[Message]:
        """Channel-level messages, newest first, as ``conversations.history`` lists them."""
        with self._lock:
            shown: list[_Stored] = []
            for ts in self._order[channel.id]:
                parent = self._messages[(channel.id, ts)]
                shown.append(parent)
                shown += [
                    self._messages[(channel.id, r)]
                    for r in parent.replies
                    if self._messages[(channel.id, r)].reply_broadcast
                ]
            shown = [m for m in shown if not m.deleted]
            shown.sort(key=lambda m: m.ts, reverse=True)
            return [self._snapshot(m) for m in shown]

    def conversation(self, channel: Channel, *, include_deleted: bool = False) -> list[Message]:
        """Parents oldest first, each with its replies (for test assertions)."""
        with self._lock:
            parents = [self._messages[(channel.id, ts)] for ts in self._order[channel.id]]
            return [
                self._snapshot(m, include_deleted=include_deleted)
                for m in parents
                if include_deleted or not m.deleted
            ]

    def orphans(self, channel: Channel) -> list[Message]:
        with self._lock:
            return [
                self._snapshot(self._messages[(channel.id, ts)]) for ts in self._orphans[channel.id]
            ]

    def _snapshot(self, stored: _Stored, *, include_deleted: bool = False) -> Message:
        replies = tuple(
            self._snapshot(self._messages[(stored.channel, ts)])
            for ts in stored.replies
            if include_deleted or not self._messages[(stored.channel, ts)].deleted
        )
        return Message(
            channel=stored.channel,
            ts=stored.ts,
            text=stored.content.text,
            blocks=copy.deepcopy(stored.content.blocks),
            attachments=copy.deepcopy(stored.content.attachments),
            via=stored.via,
            posted_at=stored.posted_at,
            thread_ts=stored.parent or (stored.ts if stored.replies else None),
            reply_broadcast=stored.reply_broadcast,
            deleted=stored.deleted,
            edits=tuple(stored.edits),
            edited_ts=stored.edited_ts,
            replies=replies,
            files=copy.deepcopy(stored.files),
        )

    @staticmethod
    def wire(message: Message) -> dict[str, Any]:
        """The message as the Web API shows it."""
        body: dict[str, Any] = {"type": "message", "text": message.text, "ts": message.ts}
        if message.via == "webhook":
            body.update(subtype="bot_message", bot_id=WEBHOOK_BOT_ID)
        else:
            body.update(user=BOT_USER_ID, bot_id=BOT_ID, app_id="A0GUARDIAN", team=TEAM_ID)
        if message.blocks:
            body["blocks"] = message.blocks
        if message.attachments:
            body["attachments"] = message.attachments
        if message.files:
            body.update(files=list(message.files), upload=True, display_as_bot=False)
        if message.thread_ts is not None:
            body["thread_ts"] = message.thread_ts
        if message.is_reply:
            body["parent_user_id"] = BOT_USER_ID
            if message.reply_broadcast:
                body["subtype"] = "thread_broadcast"
        elif message.replies:
            body.update(
                reply_count=len(message.replies),
                reply_users=[BOT_USER_ID],
                reply_users_count=1,
                latest_reply=message.replies[-1].ts,
            )
        if message.edited_ts is not None:
            body["edited"] = {"user": BOT_USER_ID, "ts": message.edited_ts}
        return body
