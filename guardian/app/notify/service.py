"""The Slack notifier: alert transitions and remediation events in, Slack messages out.

Intake (``on_transitions``, ``on_remediation``, ``poll_remediation``, ``tick``) only
writes the database: the episode's new state and its message operations commit in one
transaction, so the engine and the executor never wait for Slack. A worker thread
(``start``/``stop``) drains the outbox; ``drain`` does one pass for callers without it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from guardian.adapters.slack.blocks import (
    SlackPayload,
    render_detail,
    render_group,
    render_parent,
    render_reply,
    with_marker,
)
from guardian.adapters.slack.outbox import EpisodeRow, SlackStore, ThreadRow
from guardian.adapters.slack.transport import Transport
from guardian.adapters.sqlite_db import Database
from guardian.app.notify.delivery import Deliverer
from guardian.app.notify.metrics import NotifierMetrics
from guardian.app.notify.secrets import build_transport
from guardian.app.settings.slack import SlackSettings
from guardian.engine.notify import lifecycle as lc
from guardian.engine.notify.findings import (
    apply_remediation,
    apply_transition,
    finding_for_event,
    with_cost,
)
from guardian.engine.notify.routing import muted
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, GroupSummary, HistoryEntry, OwnerContext
from guardian.model.remediation_events import RemediationEvent, episode_id

logger = logging.getLogger(__name__)

ContextLookup = Callable[[LabelSet], OwnerContext | None]
REMEDIATION_CURSOR = "remediation"
_TICK_EVERY = 30.0


class RemediationFeed(Protocol):
    """The remediation ledger: events after sequence number ``seq``, oldest first, each
    carrying its ``seq`` (``Ledger.events_since``)."""

    def events_since(self, seq: int) -> Sequence[RemediationEvent]: ...


class SlackNotifier:
    def __init__(
        self,
        settings: SlackSettings,
        db: Database,
        clock: Callable[[], float],
        transport: Transport,
        *,
        registry: CollectorRegistry | None = None,
        context: ContextLookup | None = None,
    ) -> None:
        self.settings = settings
        self._db = db
        self._clock = clock
        self._store = SlackStore(db)
        self._webhook = not transport.can_update
        self._rules = settings.finding_rules()
        self._routes = settings.routes()
        self._mute = settings.mute_windows()
        self._context = context
        self.metrics = NotifierMetrics(registry, self._store.depth)
        self._deliverer = Deliverer(self._store, transport, clock, settings.delivery, self.metrics)
        self._drain_lock = threading.Lock()  # the worker and a caller must not both send
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_tick = float("-inf")

    @classmethod
    def from_settings(
        cls,
        settings: SlackSettings,
        db: Database,
        clock: Callable[[], float],
        env: Mapping[str, str],
        *,
        registry: CollectorRegistry | None = None,
        context: ContextLookup | None = None,
    ) -> SlackNotifier:
        """Build the transport from the settings; the secret comes from ``env`` or a file."""
        transport = build_transport(settings, env)
        return cls(settings, db, clock, transport, registry=registry, context=context)

    # -------------------------------------------------------------- intake
    def on_transitions(self, transitions: Iterable[AlertTransition]) -> None:
        """One evaluation cycle's transitions (pending ones are ignored)."""
        with self._db.transaction() as conn:
            self.record_transitions(conn, transitions)
        self.wake()

    def record_transitions(
        self, conn: sqlite3.Connection, transitions: Iterable[AlertTransition]
    ) -> None:
        """``on_transitions`` inside the caller's transaction: pass it as
        ``AlertStore.save_group(..., extra=...)`` and the engine's state and the
        notifications commit together (no window where one exists without the other).
        Call ``wake()`` after the commit."""
        batch = [t for t in transitions if t.kind is not TransitionKind.PENDING]
        if not batch:
            return
        now = self._clock()
        group_of = self._form_groups(conn, batch, now) if self.settings.grouping.enabled else {}
        for t in batch:
            if self._store.seen(conn, lc.transition_idem(t), now):
                continue
            ep = episode_id(t.labels, t.active_at)
            row = self._store.episode(conn, ep)
            changed = apply_transition(
                row.finding if row else None, t, self._rules, self._lookup(t.labels)
            )
            if changed is not None:
                after, entry = changed
                self._apply(conn, row, after, entry, lc.transition_idem(t), now, group_of.get(ep))

    def wake(self) -> None:
        """New operations are in the outbox: let the worker look now."""
        self._wake.set()

    def on_remediation(self, events: Iterable[RemediationEvent]) -> None:
        """Ladder events, in order. Replays are ignored (each event's key is remembered)."""
        now = self._clock()
        with self._db.transaction() as conn:
            for e in events:
                self._remediation(conn, e, now)
        self._wake.set()

    def poll_remediation(self, feed: RemediationFeed, max_batches: int = 20) -> int:
        """Consume the ledger since the stored cursor; the cursor moves in the same
        transaction as the messages it caused, so a crash neither skips nor repeats one."""
        total = 0
        for _ in range(max_batches):
            cursor = int(self._store.get_cursor(REMEDIATION_CURSOR) or 0)
            events = feed.events_since(cursor)
            if not events:
                break
            last = max((e.seq for e in events if e.seq is not None), default=None)
            now = self._clock()
            with self._db.transaction() as conn:
                for e in events:
                    self._remediation(conn, e, now)
                if last is not None and last > cursor:
                    self._store.set_cursor(conn, REMEDIATION_CURSOR, str(last))
            total += len(events)
            if last is None or last <= cursor:
                break  # events without sequence numbers: the change keys still dedupe them
        self._wake.set()
        return total

    def _remediation(self, conn: sqlite3.Connection, e: RemediationEvent, now: float) -> None:
        idem = f"{e.episode}:step:{e.step.value}:{e.outcome.value}:{e.at:.3f}"
        if self._store.seen(conn, idem, now):
            return
        row = self._store.episode(conn, self._alert_episode(conn, e))
        before = row.finding if row else finding_for_event(e, self._rules)
        changed = apply_remediation(before, e, self._rules)
        if changed is not None:
            self._apply(conn, row, changed[0], changed[1], idem, now, None)

    def _alert_episode(self, conn: sqlite3.Connection, e: RemediationEvent) -> str:
        """The ledger's episodes are per workload, the engine's per alert: find the alert
        episode this ladder belongs to, once, and remember it."""
        known = self._store.alias(conn, e.episode)
        if known is not None:
            return known
        if self._store.episode(conn, e.episode) is not None:
            return e.episode
        match = self._store.match_alert(conn, e.alert_labels) if e.alert_labels else None
        if match is None:
            return e.episode  # an episode of its own (the notifier never saw the alert)
        self._store.set_alias(conn, e.episode, match)
        return match

    def _lookup(self, labels: LabelSet) -> OwnerContext | None:
        if self._context is None:
            return None
        try:
            return self._context(labels)
        except Exception:  # a lookup failure costs the mention, never the message
            logger.exception("slack: owner lookup failed for %s", labels)
            return None

    # -------------------------------------------------------------- planning
    def _form_groups(
        self, conn: sqlite3.Connection, batch: list[AlertTransition], now: float
    ) -> dict[str, str]:
        known = {
            ep
            for t in batch
            if (ep := episode_id(t.labels, t.active_at))
            and self._store.episode(conn, ep) is not None
        }
        group_of: dict[str, str] = {}
        for (alertname, namespace), members in lc.groups_in_cycle(
            batch, known, self.settings.grouping.min_alerts
        ).items():
            key = lc.group_key(alertname, namespace, max(t.at for t in members))
            findings = []
            for t in members:
                changed = apply_transition(None, t, self._rules, self._lookup(t.labels))
                if changed is not None and not muted(self._mute, changed[0], now):
                    findings.append(changed[0])
            if len(findings) < self.settings.grouping.min_alerts:
                continue
            thread = self._store.ensure_thread(
                conn, key, self._routes.channel_for(findings[0]), "group", now
            )
            summary = lc.summarise(key, alertname, namespace, findings, now)
            self._enqueue(conn, thread, lc.plan_group(summary, webhook=self._webhook), now)
            group_of.update((f.episode, key) for f in findings)
        return group_of

    def _apply(
        self,
        conn: sqlite3.Connection,
        row: EpisodeRow | None,
        after: Finding,
        entry: HistoryEntry,
        idem: str,
        now: float,
        group: str | None,
    ) -> None:
        thread_key = row.thread if row else (group or f"episode:{after.episode}")
        thread = self._store.ensure_thread(
            conn, thread_key, self._routes.channel_for(after), "group" if group else "episode", now
        )
        announced = row.announced if row else False
        new_row = EpisodeRow(
            after.episode,
            thread_key,
            after,
            announced,
            dirty=False,
            last_notified_at=row.last_notified_at if row else now,
            reminders=row.reminders if row else 0,
        )
        if muted(self._mute, after, now):
            self._store.save_episode(conn, _replace(new_row, dirty=True))
            return
        self._store.save_episode(conn, new_row)  # a group summary reads its members
        summary = self._summary(conn, thread) if thread.kind == "group" else None
        ops = lc.plan_change(
            thread=thread_key,
            announced=announced,
            after=after,
            entry=entry,
            idem=idem,
            summary=summary,
            webhook=self._webhook,
        )
        if ops or (thread.kind == "group" and not announced):  # the summary announced it
            self._enqueue(conn, thread, ops, now)
            new_row = _replace(new_row, announced=True, last_notified_at=now)
            self._store.save_episode(conn, new_row)

    def _summary(self, conn: sqlite3.Connection, thread: ThreadRow) -> GroupSummary:
        members = self._store.members(conn, thread.key)
        first = members[0]
        return lc.summarise(
            thread.key, first.alertname, first.namespace or "", members, self._clock()
        )

    def _enqueue(
        self, conn: sqlite3.Connection, thread: ThreadRow, ops: list[lc.Op], now: float
    ) -> None:
        for op in ops:
            payload = with_marker(self._render(op, now), op.idem)
            self._store.enqueue(
                conn,
                idem=op.idem,
                channel=thread.channel,
                thread=thread.key,
                op=op.kind.value,
                payload=payload.to_json(),
                now=now,
            )

    def _render(self, op: lc.Op, now: float) -> SlackPayload:
        if op.summary is not None:
            return render_group(op.summary, now)
        if op.kind is lc.OpKind.REPLY:
            if op.entry is not None:
                return render_reply(
                    op.entry, op.finding, op.finding.alertname if op.finding else ""
                )
            assert op.finding is not None  # noqa: S101 - plan_change always sets one
            return render_detail(op.finding, now)
        assert op.finding is not None  # noqa: S101 - parents carry a finding or a summary
        change = op.entry if self._webhook else None
        return render_parent(op.finding, now, reminder=op.reminder, change=change)

    # -------------------------------------------------------------- reminders, mutes
    def tick(self) -> None:
        """Reminders for episodes still wasting after ``repeat_interval``; catch up on
        episodes whose mute window ended; forget old finished operations."""
        now = self._clock()
        self._last_tick = now
        reminded: set[str] = set()
        with self._db.transaction() as conn:
            for row in self._store.reminder_candidates(conn):
                self._tick_one(conn, row, now, reminded)
        self._store.prune(now - self.settings.delivery.retention)
        self._wake.set()

    def _tick_one(
        self, conn: sqlite3.Connection, row: EpisodeRow, now: float, reminded: set[str]
    ) -> None:
        finding = with_cost(row.finding, now, self._rules.prices)
        if muted(self._mute, finding, now):
            return
        thread = self._store.thread(row.thread, conn)
        assert thread is not None  # noqa: S101 - created with the episode
        if row.dirty:
            entry = HistoryEntry(now, finding.phase, "Update after a mute window.")
            clean = _replace(row, finding=finding, dirty=False)
            self._store.save_episode(conn, clean)
            if not row.announced and not finding.open:
                return
            summary = self._summary(conn, thread) if thread.kind == "group" else None
            catch_up = lc.plan_change(
                thread=row.thread,
                announced=row.announced,
                after=finding,
                entry=entry,
                idem=f"{row.episode}:unmute:{finding.updated_at:.3f}",
                summary=summary,
                webhook=self._webhook,
            )
            self._enqueue(conn, thread, catch_up, now)
            self._store.save_episode(conn, _replace(clean, announced=True, last_notified_at=now))
            return
        if not row.announced or not lc.reminder_due(
            finding, row.last_notified_at, now, self.settings.repeat_interval
        ):
            return
        number = row.reminders + 1
        ops: list[lc.Op] = []
        if thread.kind == "group" and thread.key in reminded:
            pass  # one reminder per group thread
        else:
            summary = self._summary(conn, thread) if thread.kind == "group" else None
            ops = lc.plan_reminder(
                thread=row.thread,
                finding=finding.with_changes(updated_at=now),
                number=number,
                summary=summary,
                webhook=self._webhook,
            )
            reminded.add(thread.key)
        self._enqueue(conn, thread, ops, now)
        self._store.save_episode(
            conn, _replace(row, finding=finding, last_notified_at=now, reminders=number)
        )

    # -------------------------------------------------------------- delivery
    def drain(self) -> float | None:
        """Send what is due; returns when the next operation is due (None: outbox empty)."""
        with self._drain_lock:
            return self._deliverer.drain()

    def outbox_depth(self) -> int:
        return sum(self._store.depth().values())

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="slack-notifier", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker after its current call; the outbox keeps the rest."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.warning("slack: the notifier worker did not stop within %ss", timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = 1.0
            try:
                if self._clock() - self._last_tick >= _TICK_EVERY:
                    self.tick()
                with self._drain_lock:
                    due = self._deliverer.drain(limit=50)
                if due is not None:
                    wait = max(0.01, min(due - self._clock(), 1.0))
            except Exception:  # the loop edge: log, wait, carry on
                logger.exception("slack: notifier pass failed")
                wait = 5.0
            self._wake.wait(wait)
            self._wake.clear()


def _replace(row: EpisodeRow, **changes: Any) -> EpisodeRow:
    return replace(row, **changes)
