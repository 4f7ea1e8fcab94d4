"""Drain the durable outbox into Slack: one FIFO per channel, paced, retried, reconciled.

Per channel the head operation goes first, and nothing behind it overtakes it. Posts
(parents and replies) are spaced ``post_interval`` apart per channel; a 429 blocks that
channel for ``Retry-After``; 5xx and connection errors back off exponentially. Before a
post that may already have reached Slack is sent again (a crash or an ambiguous error
after the ``sending`` mark was committed), the channel or thread history is searched for
the message's marker block_id. With ``may_send`` (the leader's fence), each operation
asks it first: a replica that no longer holds the Lease sends nothing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from guardian.adapters.slack.blocks import marker
from guardian.adapters.slack.outbox import PENDING, SENDING, OutboxItem, SlackStore
from guardian.adapters.slack.transport import (
    CannotReconcile,
    MessageGone,
    RateLimited,
    Rejected,
    Sent,
    Transport,
    Unauthorized,
    Uncertain,
)
from guardian.app.notify.metrics import NotifierMetrics
from guardian.app.notify.picture_delivery import MAX_ATTEMPTS, PARENT_WAIT_S, PictureStep
from guardian.app.settings.slack import DeliverySettings
from guardian.engine.notify.lifecycle import OpKind
from guardian.engine.notify.state import ThreadRow
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

_RECONCILE_SLACK = 60.0  # seconds before the first attempt to search from (clock skew)


class Lane(Enum):
    """Which operations a drain sends. Pictures have a worker of their own: drawing one
    reads Prometheus, which may be slow or down, and must never hold a message back."""

    ALL = "all"
    MESSAGES = "messages"
    PICTURES = "pictures"

    def takes(self, item: OutboxItem) -> bool:
        if self is Lane.ALL:
            return True
        return (item.op is OpKind.PICTURE) == (self is Lane.PICTURES)


@dataclass(frozen=True)
class DeliveryLinks:
    """``may_send``: the leader's fence on every call; ``pictures``: draws and uploads
    an evidence picture (None: pictures are off, their rows are given up)."""

    may_send: Callable[[], bool] | None = None
    pictures: PictureStep | None = None


class Deliverer:
    def __init__(
        self,
        store: SlackStore,
        transport: Transport,
        clock: Callable[[], float],
        settings: DeliverySettings,
        metrics: NotifierMetrics,
        links: DeliveryLinks = DeliveryLinks(),
    ) -> None:
        self._store = store
        self._may_send = links.may_send or (lambda: True)
        self._pictures = links.pictures
        self._transport = transport
        self._clock = clock
        self._settings = settings
        self._metrics = metrics
        self._next_post: dict[str, float] = {}
        self._blocked: dict[str, float] = {}
        self._warned_history = False

    def _ready_at(self, item: OutboxItem) -> float:
        ready = max(item.not_before, self._blocked.get(item.channel, 0.0))
        if item.op is not OpKind.UPDATE:
            ready = max(ready, self._next_post.get(item.channel, 0.0))
        return ready

    def drain(self, limit: int = 1000, lane: Lane = Lane.ALL) -> float | None:
        """Send what is due now in ``lane`` (at most ``limit`` operations). Returns when
        the next operation is due, or ``None`` when that part of the outbox is empty."""
        done = 0
        while done < limit:
            heads = [h for h in self._store.heads() if lane.takes(h)]
            if not heads:
                return None
            now = self._clock()
            due = [h for h in heads if self._ready_at(h) <= now]
            if not due:
                return min(self._ready_at(h) for h in heads)
            for item in due:
                if not self._may_send():
                    logger.info("slack: not the leader (or its hold is stale): not sending")
                    return self._clock() + 1.0
                try:
                    self._process(item)
                except Exception:  # a bug must not stop the other channels
                    logger.exception("slack: operation %s failed unexpectedly", item.seq)
                    self._store.retry_later(
                        item.seq, item.state, now + self._backoff(item.attempts + 1), "error"
                    )
                    self._metrics.requests.labels(item.op.value, "error").inc()
                done += 1
        return self._clock()

    def _backoff(self, attempts: int) -> float:
        s = self._settings
        return float(min(s.backoff_max, s.backoff_initial * math.pow(2, max(0, attempts - 1))))

    # -------------------------------------------------------------- one operation
    def _process(self, item: OutboxItem) -> None:
        thread = self._store.threads([item.thread]).get(item.thread)
        op = item.op
        if op is OpKind.PICTURE:
            self._picture(item, thread)
            return
        if op is OpKind.UPDATE and (
            thread is None or thread.ts is None or not self._transport.can_update
        ):
            self._store.convert_to_post(item.seq)  # no parent to edit: post the state afresh
            return
        if op is OpKind.REPLY and (thread is None or thread.ts is None):
            self._store.convert_to_post(item.seq)  # its parent never arrived: keep the news
            return
        if item.state == SENDING and op is not OpKind.UPDATE and self._settled(item, thread):
            return
        now = self._clock()
        self._store.mark_sending(item.seq, now)
        try:
            sent = self._send(item, thread)
        except (RateLimited, Uncertain, Unauthorized, MessageGone, Rejected) as exc:
            self._failed(item, exc, now)
        else:
            self._store.mark_done(
                item,
                self._clock(),
                sent.channel_id or (thread.channel_id if thread else None),
                sent.ts,
                anchor=op is OpKind.POST,
            )
            self._metrics.requests.labels(op.value, "ok").inc()
        finally:
            if op is not OpKind.UPDATE:
                self._next_post[item.channel] = self._clock() + self._settings.post_interval

    def _picture(self, item: OutboxItem, thread: ThreadRow | None) -> None:
        now = self._clock()
        if self._pictures is None:
            self._store.mark_dead(item.seq, now, "pictures are off, or cannot be drawn here")
            return
        if thread is None or thread.ts is None:  # its parent first; not an attempt
            waited = now - (item.first_attempt_at or now)
            if waited > PARENT_WAIT_S:
                self._store.mark_dead(item.seq, now, "given up: its parent was never posted")
            else:
                self._store.wait_for_parent(item.seq, now, now + self._settings.post_interval)
            return
        self._store.mark_sending(item.seq, now)
        try:
            done = self._pictures(item, thread)
        except TransientError as exc:
            if item.attempts + 1 >= MAX_ATTEMPTS:
                self._store.mark_dead(item.seq, now, f"given up: {exc}")
                self._count(item, "dead", f"given up: {exc}", logging.WARNING)
                return
            delay = exc.delay or self._backoff(item.attempts + 1)
            if isinstance(exc, RateLimited):
                self._blocked[item.channel] = now + delay
            self._store.retry_later(item.seq, PENDING, now + delay, str(exc))
            self._count(item, "retry", str(exc), logging.INFO)
        except PermanentError as exc:
            self._store.mark_dead(item.seq, now, str(exc))
            self._metrics.dead.inc()
            self._count(item, "rejected", str(exc), logging.WARNING)
        else:
            self._store.mark_done(item, self._clock(), done.channel_id, None, anchor=False)
            self._metrics.requests.labels(item.op.value, "ok").inc()
        finally:
            self._next_post[item.channel] = self._clock() + self._settings.post_interval

    def _settled(self, item: OutboxItem, thread: ThreadRow | None) -> bool:
        """A post that may have reached Slack already: True when it did (marked done) or
        when Slack cannot be asked yet (tried again later); False: send it."""
        try:
            found = self._reconcile(item, thread)
        except TransientError as exc:  # Slack still unreachable: try again later
            delay = exc.delay or self._backoff(item.attempts + 1)
            self._store.retry_later(item.seq, SENDING, self._clock() + delay, str(exc))
            self._count(item, "uncertain", str(exc), logging.WARNING)
            return True
        if found is None:
            return False
        channel_id = found.channel_id or (thread.channel_id if thread else None)
        self._store.mark_done(
            item, self._clock(), channel_id, found.ts, anchor=item.op is OpKind.POST
        )
        return True

    def _send(self, item: OutboxItem, thread: ThreadRow | None) -> Sent:
        if item.op is OpKind.UPDATE:
            assert thread is not None  # noqa: S101 - checked in _process
            assert thread.ts is not None  # noqa: S101
            assert thread.channel_id is not None  # noqa: S101
            return self._transport.update(thread.channel_id, thread.ts, item.payload)
        if item.op is OpKind.REPLY:
            assert thread is not None  # noqa: S101 - checked in _process
            assert thread.ts is not None  # noqa: S101
            channel = thread.channel_id or item.channel
            return self._transport.post(channel, item.payload, thread.ts)
        return self._transport.post(item.channel, item.payload, None)

    def _failed(
        self,
        item: OutboxItem,
        exc: RateLimited | Uncertain | Unauthorized | MessageGone | Rejected,
        now: float,
    ) -> None:
        if isinstance(exc, RateLimited):
            delay = exc.delay or 1.0
            self._blocked[item.channel] = now + delay
            self._store.retry_later(item.seq, PENDING, now + delay, str(exc))
            self._count(item, "rate_limited", str(exc), logging.WARNING)
        elif isinstance(exc, Uncertain):
            # A post may have arrived: stay "sending" so the next try looks first.
            state = PENDING if item.op is OpKind.UPDATE else SENDING
            self._store.retry_later(
                item.seq, state, now + self._backoff(item.attempts + 1), str(exc)
            )
            self._count(item, "uncertain", str(exc), logging.WARNING)
        elif isinstance(exc, Unauthorized):
            self._store.retry_later(item.seq, PENDING, now + self._settings.backoff_max, str(exc))
            self._count(item, "unauthorized", str(exc), logging.ERROR)
        elif isinstance(exc, MessageGone):
            self._store.convert_to_post(item.seq)
            self._count(item, "gone", str(exc), logging.WARNING)
        else:
            self._store.mark_dead(item.seq, now, str(exc))
            self._metrics.dead.inc()
            self._count(item, "rejected", str(exc), logging.ERROR)

    def _count(self, item: OutboxItem, result: str, text: str, level: int) -> None:
        self._metrics.requests.labels(item.op.value, result).inc()
        logger.log(
            level, "slack: %s to %s (operation %s): %s", item.op, item.channel, item.seq, text
        )

    def _reconcile(self, item: OutboxItem, thread: ThreadRow | None) -> Sent | None:
        """Look for the message in Slack before sending it again; ``None``: send it."""
        if self._settings.reconcile != "history" or not self._transport.can_update:
            return None  # webhooks cannot read history: at-least-once
        thread_ts = thread.ts if thread is not None and item.op is OpKind.REPLY else None
        channel_id = thread.channel_id if thread is not None else None
        channel_id = channel_id or self._store.known_channel_id(item.channel)
        oldest = (item.first_attempt_at or self._clock()) - _RECONCILE_SLACK
        try:
            found = self._transport.find(
                channel_id or item.channel, marker(item.idem), oldest, thread_ts
            )
        except CannotReconcile as exc:
            if not self._warned_history:
                self._warned_history = True
                logger.warning(
                    "slack: cannot read history to check for a message that may have arrived "
                    "(%s); re-posting, which may duplicate it. Grant channels:history and "
                    "groups:history, or set delivery.reconcile: resend.",
                    exc,
                )
            return None
        self._metrics.reconciled.labels(str(found is not None).lower()).inc()
        if found is not None:
            logger.info("slack: operation %s had reached Slack before; not re-posting", item.seq)
        return found
