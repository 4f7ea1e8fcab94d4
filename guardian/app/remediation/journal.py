"""The leader's side of the shared episode state: what the ladder records in the cluster.

Around every ladder step: ``claim`` (a compare-and-swap that marks the step in flight by
this replica, refused if another leader already did it), the step itself, then
``settle`` (the step done, with its time and the next step's due time) or ``release``
(it failed). A leader that died between the two leaves the step in flight: the next
leader finds it applied on the object (reconcile.py) or claims it again, once. The
planner's view of past steps comes from here, not from this replica's SQLite, so a
new leader neither repeats a step nor restarts a grace period; the ledger stays the
local history the notifier reads.

Also the Slack hand-over: the notifier publishes an episode's parent message here and a
new leader's notifier finds it again (app/notify/handover.py).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.fence import NotLeader
from guardian.model.labels import LabelSet
from guardian.model.reclaim import LedgerEntry, LedgerView, PlannedAction, Wait
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import (
    EpisodeState,
    InFlight,
    SharedEpisode,
    SlackParent,
    StepMark,
    says_news,
    with_wait,
)
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError, PermanentError

logger = logging.getLogger(__name__)

FOUND = "(found in the cluster)"


class StepTaken(PermanentError):
    """The shared state says the step must not be applied now (done, or episode over)."""


class EpisodeJournal:
    def __init__(self, store: EpisodeStore, identity: str) -> None:
        self.store = store
        self.identity = identity
        self._stale = threading.Event()
        self._stale.set()

    # -------------------------------------------------------------- reading
    def invalidate(self) -> None:
        """Read every shard again before the next use (called on becoming the leader)."""
        self._stale.set()

    def refresh(self) -> None:
        """Load the shards if this leadership has not read them yet. Raises on failure."""
        if self._stale.is_set() or not self.store.loaded:
            self.store.load()
            self._stale.clear()
            logger.info("shared state: %s episode(s) read", len(self.store.episodes()))

    def get(self, episode: str) -> SharedEpisode | None:
        return self.store.get(episode)

    def episodes(self) -> list[SharedEpisode]:
        return self.store.episodes()

    def view(self) -> LedgerView:
        """What the planner needs: live episodes by workload, and every recorded step."""
        records = self.store.episodes()
        opened: dict[WorkloadRef, tuple[str, float, str]] = {}
        for r in records:
            if r.live:
                opened.setdefault(r.workload, (r.episode, r.started_at, r.policy))
        entries = tuple(
            LedgerEntry.of(r.episode, r.workload, m.step, m.outcome, m.at, r.policy)
            for r in records
            for m in r.steps
            if m.step not in (LadderStep.GIVE_UP, LadderStep.HOLD, LadderStep.RESUME)
        )
        outages = {
            r.episode: (r.outage.since, r.outage.resumed_at)
            for r in records
            if r.live and r.outage is not None
        }
        return LedgerView(opened, entries, outages)

    # -------------------------------------------------------------- the step protocol
    def claim(self, action: PlannedAction, started_at: float, now: float) -> None:
        """Mark ``action`` in flight by this replica. Raises StepTaken if it is done
        already (or the episode ended), NotLeader through the fenced client."""
        me, step = self.identity, action.step

        def change(cur: SharedEpisode | None) -> SharedEpisode | None:
            if cur is None:
                if step is LadderStep.RESTORE:
                    return None  # a reclaim from before the shared state: nothing to track
                cur = SharedEpisode(
                    action.episode,
                    action.workload,
                    action.policy,
                    started_at,
                    EpisodeState.OPEN,
                    action.alert_labels,
                    now,
                )
            elif not cur.live and step is not LadderStep.RESTORE:
                raise StepTaken(f"episode {cur.episode} is {cur.state.value}")
            mark = cur.done(step)
            if mark is not None and (mark.outcome is StepOutcome.APPLIED or action.dry_run):
                raise StepTaken(f"{step.value} already done by {mark.by} at {rfc3339(mark.at)}")
            flying = cur.inflight
            if flying is not None and flying.step is step and flying.by == me:
                return cur  # ours: a retry after a 409
            attempt = 1
            if flying is not None and flying.step is step:
                attempt = flying.attempt + 1
                logger.warning(
                    "%s of episode %s was in flight by %s since %s and never settled: "
                    "not found applied, so applying it again (attempt %s)",
                    step.value,
                    cur.episode,
                    flying.by,
                    rfc3339(flying.at),
                    attempt,
                )
            return replace(cur, inflight=InFlight(step, attempt, now, me), updated_at=now)

        self.store.update(action.episode, change, now)

    def settle(
        self,
        action: PlannedAction,
        outcome: StepOutcome,
        now: float,
        *,
        original_replicas: int | None = None,
        by: str | None = None,
    ) -> None:
        """``action`` ended with ``outcome`` (applied or dry-run): record it and its next step."""
        step = action.step
        mark = StepMark(step, outcome, now, by or self.identity)

        def change(cur: SharedEpisode | None) -> SharedEpisode | None:
            if cur is None:
                return None
            new = replace(cur, steps=(*cur.steps, mark), updated_at=now)
            if cur.inflight is not None and cur.inflight.step is step:
                new = replace(new, inflight=None)
            if step not in (LadderStep.RECLAIM, LadderStep.RESTORE) and action.next_step:
                new = replace(new, next_step=action.next_step, next_step_due=action.next_step_due)
            if outcome is not StepOutcome.APPLIED:
                return new
            if step is LadderStep.RECLAIM:
                new = replace(
                    new, state=EpisodeState.RECLAIMED, original_replicas=original_replicas
                )
            elif step is LadderStep.RESTORE:
                new = replace(new, state=EpisodeState.RESTORED, ended_at=now)
            else:
                return new
            return replace(new, next_step=None, next_step_due=None)  # none after these two

        self.store.update(action.episode, change, now)

    def release(self, action: PlannedAction, now: float) -> None:
        """Our claim on ``action`` ends without the step (it failed, or was dropped)."""

        def change(cur: SharedEpisode | None) -> SharedEpisode | None:
            flying = cur.inflight if cur is not None else None
            if cur is None or flying is None or flying.step is not action.step:
                return cur
            return replace(cur, inflight=None, updated_at=now)

        try:
            self.store.update(action.episode, change, now)
        except GuardianError as exc:  # the next leader sees it in flight and decides
            logger.warning("shared state: could not release %s: %s", action.episode, exc)

    def note_wait(self, wait: Wait, now: float) -> bool | None:
        """Record a wait of ``wait.episode`` once; False if already said, by this leader or
        an earlier one, so that nobody is told twice; None without a shared record of the
        episode. A wait says once what it waits for
        and why (a pending step: its next step and due time too); a hold for lack of
        evidence is said once per outage, whatever its reason says."""
        cur = self.store.get(wait.episode)
        if cur is None:
            return None  # no shared record (nothing done yet): the ledger decides
        if not says_news(cur, wait):
            return False

        def change(rec: SharedEpisode | None) -> SharedEpisode | None:
            if rec is None or not says_news(rec, wait):
                return rec
            return with_wait(rec, wait, now)

        try:
            self.store.update(wait.episode, change, now)
        except NotLeader:
            raise
        except GuardianError as exc:  # said now; perhaps said again by the next leader
            logger.warning("shared state: could not note %s's wait: %s", wait.episode, exc)
        return True

    def resume(self, episode: str, now: float) -> SharedEpisode | None:
        """The evidence of ``episode`` is back: end its outage once; the record as it was
        (its outage's start) if this call ended it, else None."""
        cur = self.store.get(episode)
        if cur is None or cur.outage is None or cur.outage.resumed_at is not None:
            return None

        def change(rec: SharedEpisode | None) -> SharedEpisode | None:
            if rec is None or rec.outage is None or rec.outage.resumed_at is not None:
                return rec
            ended = replace(rec, outage=replace(rec.outage, resumed_at=now), updated_at=now)
            # What was said during the outage no longer holds; what was said since does.
            return replace(ended, hold=None, planned="") if rec.hold is HoldKind.OUTAGE else ended

        self.store.update(episode, change, now)
        return cur

    def held(self) -> list[SharedEpisode]:
        """The live episodes held now for lack of evidence."""
        return [
            r
            for r in self.store.episodes()
            if r.live and r.outage is not None and r.outage.resumed_at is None
        ]

    def end(self, episode: str, state: EpisodeState, now: float) -> None:
        """The episode is over (alerts gone, restored outside the ladder)."""

        def change(cur: SharedEpisode | None) -> SharedEpisode | None:
            if cur is None or not cur.live:
                return cur
            return replace(
                cur,
                state=state,
                ended_at=now,
                inflight=None,
                next_step=None,
                next_step_due=None,
                updated_at=now,
            )

        self.store.update(episode, change, now)

    # -------------------------------------------------------------- Slack hand-over
    def parent_for_ladder(self, episode: str) -> SlackParent | None:
        if not self._ready():
            return None
        record = self.store.get(episode)
        return record.slack if record is not None else None

    def parent_for_alert(self, labels: LabelSet) -> tuple[str, SlackParent] | None:
        """The live episode whose ladder alert has exactly these labels, with its parent."""
        if not self._ready():
            return None
        for record in self.store.episodes():
            if record.live and record.slack is not None and record.alert_labels == labels:
                return record.episode, record.slack
        return None

    def publish_parent(self, episode: str, parent: SlackParent, now: float) -> None:
        """Keep ``parent`` with the episode (unchanged if the same message is there)."""

        def change(cur: SharedEpisode | None) -> SharedEpisode | None:
            if cur is None:
                return None
            old = cur.slack
            if old is not None and (old.thread, old.channel_id, old.ts) == (
                parent.thread,
                parent.channel_id,
                parent.ts,
            ):
                return cur
            return replace(cur, slack=parent, updated_at=now)

        self.store.update(episode, change, now)

    def _ready(self) -> bool:
        try:
            self.refresh()
        except GuardianError as exc:
            logger.warning("shared state unreadable, Slack threads not handed over: %s", exc)
            return False
        return True
