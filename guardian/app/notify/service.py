"""The Slack notifier: alert transitions and remediation events in, Slack messages out.

Every intake has the remediation pipeline's shape: **gather** (the owners of new
episodes from the cluster, then the rows it needs from the database), **plan** (pure,
``guardian/engine/notify/planner.py``), then **one write** (a transaction with nothing
but SQL in it: the episodes' new state and their message operations commit together).

- ``prepare(transitions)`` is the two-phase hook the rule engine calls before its state
  transaction: it gathers and plans, and yields the writer the engine runs inside that
  transaction, so alert state and notifications commit atomically with no network call
  while the database is locked. ``on_transitions`` does the same in a transaction of its own.
- ``on_remediation``, ``poll_remediation`` (ladder events) and ``tick`` (reminders, mute
  windows) gather, plan and write the same way.
- With a ``handover`` (the episode state shared by every replica), an intake first
  adopts the Slack threads another leader started, and the worker hands each new parent
  of a ladder episode over (handover.py); ``may_send`` fences every Slack call.

One intake at a time (a lock taken after the cluster reads), so a plan never works on
rows another intake is changing. A worker thread (``start``/``stop``) drains the outbox;
``drain`` does one pass for callers without it. Nobody waits for Slack.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Protocol

from prometheus_client import CollectorRegistry

from guardian.adapters.slack.outbox import IntakeRows, SlackStore
from guardian.adapters.slack.posted import message_episode
from guardian.adapters.slack.transport import Transport
from guardian.adapters.sqlite_db import Database
from guardian.app.notify.delivery import Deliverer, DeliveryLinks, Lane
from guardian.app.notify.gather import ContextLookup, Gatherer
from guardian.app.notify.metrics import NotifierMetrics
from guardian.app.notify.payloads import REMEDIATION_CURSOR, intake_rows
from guardian.app.notify.picture_delivery import RangeQuery, picture_maker
from guardian.app.notify.secrets import build_transport
from guardian.app.notify.thread_handover import Handover, ThreadHandover
from guardian.app.settings.slack import SlackSettings
from guardian.engine.notify.buttons import NO_BUTTONS, ButtonRules
from guardian.engine.notify.click_plan import ClickOutcome
from guardian.engine.notify.lifecycle import transition_idem
from guardian.engine.notify.planner import (
    PlannerSettings,
    intake_batch,
    plan_click,
    plan_remediation,
    plan_tick,
    plan_transitions,
)
from guardian.engine.notify.state import NotifyPlan
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding
from guardian.model.remediation_events import RemediationEvent, episode_id
from guardian.model.shared_episode import SlackParent
from guardian_common.words import plural

logger = logging.getLogger(__name__)

Writer = Callable[[sqlite3.Connection], None]
_TICK_EVERY = 30.0


class RemediationFeed(Protocol):
    """The remediation ledger: events after sequence number ``seq``, oldest first, each
    carrying its ``seq`` (``Ledger.events_since``)."""

    def events_since(self, seq: int) -> Sequence[RemediationEvent]: ...


def _write_nothing(_conn: sqlite3.Connection) -> None:
    return None


def _planner_settings(
    settings: SlackSettings, transport: Transport, links: NotifierLinks
) -> PlannerSettings:
    drawable = settings.pictures.enabled and links.range_query is not None
    return PlannerSettings(
        rules=settings.finding_rules(),
        routes=settings.routes(),
        mute=settings.mute_windows(),
        grouping=settings.grouping.enabled,
        min_alerts=settings.grouping.min_alerts,
        repeat_interval=settings.repeat_interval,
        webhook=not transport.can_update,
        pictures=settings.pictures.rules() if drawable else None,
    )


@dataclasses.dataclass(frozen=True)
class NotifierLinks:
    """What a notifier shares with the rest of the process, each optional: the metrics
    ``registry``; ``context``, owner details from the cluster; ``handover``, the episode
    state every replica shares; ``may_send``, the leader's fence on every Slack call."""

    registry: CollectorRegistry | None = None
    context: ContextLookup | None = None
    handover: ThreadHandover | None = None
    may_send: Callable[[], bool] | None = None
    range_query: RangeQuery | None = None  # Prometheus, for the evidence pictures


class SlackNotifier:
    def __init__(
        self,
        settings: SlackSettings,
        db: Database,
        clock: Callable[[], float],
        transport: Transport,
        links: NotifierLinks = NotifierLinks(),
    ) -> None:
        self.settings = settings
        self._db = db
        self._clock = clock
        self._store = SlackStore(db)
        self._context = links.context
        self._planner = _planner_settings(settings, transport, links)
        self._gather = Gatherer(self._store, self._planner, links.context)
        self.metrics = NotifierMetrics(links.registry, self._store.depth)
        self._links = links
        self._deliverer = self._new_deliverer(settings, transport)
        handover = links.handover
        self._handover = Handover(self._store, handover, clock) if handover else None
        self._may_send = links.may_send or (lambda: True)
        self._intake = threading.Lock()  # gather -> plan -> write, one intake at a time
        self._drain_lock = threading.Lock()  # the worker and a caller must not both send
        self._pictures_lock = threading.Lock()  # likewise for the pictures' worker
        self._wake = threading.Event()
        self._wake_pictures = threading.Event()  # its own: each worker clears its event
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pictures_thread: threading.Thread | None = None
        self._last_tick = float("-inf")
        # Which buttons parents offer, asked at each intake (interactivity.py sets it).
        self.button_rules: Callable[[], ButtonRules] = lambda: NO_BUTTONS

    @classmethod
    def from_settings(
        cls,
        settings: SlackSettings,
        db: Database,
        clock: Callable[[], float],
        env: Mapping[str, str],
        links: NotifierLinks = NotifierLinks(),
    ) -> SlackNotifier:
        """Build the transport from the settings; the secret comes from ``env`` or a file."""
        return cls(settings, db, clock, build_transport(settings, env), links)

    def _new_deliverer(self, settings: SlackSettings, transport: Transport) -> Deliverer:
        on = settings.pictures.enabled
        pictures = picture_maker(transport, self._links.range_query) if on else None
        links = DeliveryLinks(self._links.may_send, pictures)
        d = settings.delivery
        return Deliverer(self._store, transport, self._clock, d, self.metrics, links)

    def reconfigure(self, settings: SlackSettings, transport: Transport) -> None:
        """Use edited settings (a config reload) from the next intake and delivery pass
        on; the outbox and the episodes' threads stay as they are."""
        planner = _planner_settings(settings, transport, self._links)
        with self._intake, self._drain_lock:
            self.settings = settings
            self._planner = planner
            self._gather = Gatherer(self._store, planner, self._context)
            # The fence (may_send) stays: a reload must not let a standby send.
            self._deliverer = self._new_deliverer(settings, transport)

    # -------------------------------------------------------------- intake
    @contextmanager
    def prepare(self, transitions: Iterable[AlertTransition]) -> Iterator[Writer]:
        """Gather and plan one evaluation cycle's transitions (pending ones are ignored);
        yields the writer to run inside the caller's transaction (SQL only), e.g.
        ``AlertStore.save_group(..., extra=writer)``. Wakes the worker once it committed.
        The intake lock is held until the block ends: keep it to the transaction."""
        batch = intake_batch(transitions)
        if not batch:
            yield _write_nothing
            return
        owners = self._gather.owners(batch)  # the cluster: before any lock
        if self._handover is not None:
            self._handover.for_transitions(batch)
        with self._intake:
            now = self._clock()
            plan = plan_transitions(
                self._gather.for_transitions(batch, owners), batch, now, self._planner
            )
            rows = self._rows(plan, now)

            def write(conn: sqlite3.Connection) -> None:
                self._store.write(conn, rows)

            yield write
        self.wake()

    def catch_up_firing(self, firing: Sequence[AlertTransition]) -> int:
        """Alerts already firing that this replica never recorded (it was a standby when
        they fired, or its state was wiped): announce them now. Another replica may have
        posted one: a ladder's parent is adopted from the shared state, any other post
        first looks for its marker in the channel (as after a crash mid-send) and adopts
        the parent it finds. Returns how many were new here."""
        batch = [t for t in firing if t.kind is TransitionKind.FIRING]
        if self._handover is not None:
            self._handover.for_transitions(batch)
        known = self._store.episodes(episode_id(t.labels, t.active_at) for t in batch)
        seen = self._store.seen(transition_idem(t) for t in batch)
        batch = [
            t
            for t in batch
            if episode_id(t.labels, t.active_at) not in known and transition_idem(t) not in seen
        ]
        if not batch:
            return 0
        owners = self._gather.owners(batch)
        planner = dataclasses.replace(self._planner, grouping=False, pictures=None)
        with self._intake:
            now = self._clock()
            plan = plan_transitions(
                self._gather.for_transitions(batch, owners), batch, now, planner
            )
            since = min(t.fired_at or t.active_at for t in batch)
            self._write(dataclasses.replace(self._rows(plan, now), maybe_posted_since=since))
        logger.info(
            "slack: %s firing before this replica led: announcing", plural(len(batch), "alert")
        )
        self.wake()
        return len(batch)

    def on_transitions(self, transitions: Iterable[AlertTransition]) -> None:
        """One evaluation cycle's transitions, in a transaction of their own."""
        with self.prepare(transitions) as write, self._db.transaction() as conn:
            write(conn)

    def wake(self) -> None:
        """New operations are in the outbox: let the workers look now."""
        self._wake.set()
        self._wake_pictures.set()

    def on_remediation(self, events: Iterable[RemediationEvent]) -> None:
        """Ladder events, in order. Replays are ignored (each event's key is remembered)."""
        batch = list(events)
        if self._handover is not None:
            self._handover.for_events(batch)
        with self._intake:
            now = self._clock()
            plan = plan_remediation(self._gather.for_events(batch), batch, now, self._planner)
            self._write(self._rows(plan, now))
        self.wake()

    def poll_remediation(self, feed: RemediationFeed, max_batches: int = 20) -> int:
        """Consume the ledger since the stored cursor; the cursor moves in the same
        transaction as the messages it caused, so a crash neither skips nor repeats one."""
        total = 0
        for _ in range(max_batches):
            with self._intake:
                cursor = int(self._store.cursor(REMEDIATION_CURSOR) or 0)
                events = feed.events_since(cursor)
                if not events:
                    break
                if self._handover is not None:
                    self._handover.for_events(events)
                now = self._clock()
                state = self._gather.for_events(events)
                plan = plan_remediation(state, events, now, self._planner, cursor=cursor)
                self._write(self._rows(plan, now))
            total += len(events)
            if plan.cursor is None:
                break  # events without sequence numbers: the change keys still dedupe them
        self.wake()
        return total

    def tick(self) -> None:
        """Reminders for episodes still wasting after ``repeat_interval``; catch up on
        episodes whose mute window ended; forget old finished operations."""
        now = self._clock()
        self._last_tick = now
        with self._intake:
            plan = plan_tick(self._gather.for_tick(), now, self._planner)
            self._write(self._rows(plan, now, prune_before=now - self.settings.delivery.retention))
        self.wake()

    def on_click(
        self, outcome: ClickOutcome, record: Callable[[], Sequence[str]] | None = None
    ) -> None:
        """A button's effect: update the parent, say who did what in the thread.
        ``record`` writes the click's ledger events (inside the intake lock, so the
        ledger poll cannot tell them first) and returns their change keys."""
        with self._intake:
            keys = tuple(record()) if record is not None else ()
            outcome = dataclasses.replace(outcome, ledger_keys=keys)
            now = self._clock()
            state = self._gather.for_click(outcome.episode, [f"click:{outcome.key}", *keys])
            self._write(self._rows(plan_click(state, outcome, now, self._planner), now))
        self.wake()

    def finding(self, episode: str) -> Finding | None:
        """The episode as its parent message shows it (None: not known here)."""
        row = self._store.episodes({episode}).get(episode)
        return row.finding if row is not None else None

    def message_episode(self, channel_id: str, ts: str) -> str | None:
        """The episode whose buttons our message ``ts`` carries (None: not ours here)."""
        return message_episode(self._db, channel_id, ts)

    def adopt_thread(self, ladder: str, parent: SlackParent, labels: LabelSet) -> None:
        """Go on in a thread another leader started (a click on its parent)."""
        if self._handover is not None:
            self._handover.adopt(ladder, parent, labels)

    def publish_handover(self) -> int:
        """Hand new parents of ladder episodes to the shared state (the worker does this)."""
        if self._handover is None or not self._may_send():
            return 0
        return self._handover.publish()

    def _rows(self, plan: NotifyPlan, now: float, prune_before: float | None = None) -> IntakeRows:
        for skip in plan.skipped:
            logger.debug("slack: no message for %s: %s", skip.key, skip.reason)
        return intake_rows(
            plan,
            now,
            webhook=self._planner.webhook,
            prune_before=prune_before,
            buttons=self.button_rules(),
        )

    def _write(self, rows: IntakeRows) -> None:
        with self._db.transaction() as conn:
            self._store.write(conn, rows)

    # -------------------------------------------------------------- delivery
    def drain(self) -> float | None:
        """Send what is due; returns when the next operation is due (None: outbox empty)."""
        with self._drain_lock, self._pictures_lock:
            return self._deliverer.drain()

    def outbox_depth(self) -> int:
        return sum(self._store.depth().values())

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="slack-notifier", daemon=True)
        self._thread.start()
        if self._links.range_query is not None:
            self._pictures_thread = threading.Thread(
                target=self._run_pictures, name="slack-pictures", daemon=True
            )
            self._pictures_thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the worker after its current call; the outbox keeps the rest."""
        self._stop.set()
        self.wake()
        for thread in (self._thread, self._pictures_thread):
            if thread is not None:
                thread.join(timeout)
                if thread.is_alive():
                    logger.warning("slack: %s did not stop within %ss", thread.name, timeout)
        self._thread = self._pictures_thread = None

    def _run(self) -> None:
        self._work("notifier", self._messages_pass, self._wake)

    def _run_pictures(self) -> None:
        self._work("picture", self._pictures_pass, self._wake_pictures)

    def _messages_pass(self) -> float | None:
        if self._clock() - self._last_tick >= _TICK_EVERY:
            self.tick()
        with self._drain_lock:
            due = self._deliverer.drain(limit=50, lane=Lane.MESSAGES)
        self.publish_handover()
        return due

    def _pictures_pass(self) -> float | None:
        with self._pictures_lock:
            return self._deliverer.drain(limit=5, lane=Lane.PICTURES)

    def _work(self, what: str, one_pass: Callable[[], float | None], wake: threading.Event) -> None:
        """A worker: a pass, then wait until the next operation is due (at most 1 s), a
        wake-up or stop."""
        while not self._stop.is_set():
            wait = 1.0
            try:
                due = one_pass()
                if due is not None:
                    wait = max(0.01, min(due - self._clock(), 1.0))
            except Exception:  # the loop edge: log, wait, carry on
                logger.exception("slack: %s pass failed", what)
                wait = 5.0
            wake.wait(wait)
            wake.clear()
