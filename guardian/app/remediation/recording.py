"""Write the cycle's steps, waits and failures to the ledger (and, on a leader, to the
shared episode state), and count them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from guardian.adapters.kube.executor import Result, original_replicas, restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.model.reclaim import PlannedAction, Wait, WorkloadState
from guardian.model.remediation_events import (
    HoldKind,
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.shared_episode import SharedEpisode
from guardian.model.times import rfc3339
from guardian_common.durations import format_duration

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class StepRecorder:
    """Events go to ``ledger``; without one (``guardian restore`` given no state) nowhere.
    With a ``journal``, each step's outcome also settles (or releases) its shared claim."""

    ledger: Ledger | None
    metrics: RemediationMetrics
    journal: EpisodeJournal | None = None

    def record(self, event: RemediationEvent, *, dedupe: bool = False) -> None:
        """Append ``event`` (with ``dedupe``: unless it repeats the last one) and count it."""
        if self.ledger is None or self.ledger.record(event, dedupe=dedupe) is None:
            return
        self.metrics.steps.labels(event.policy or "-", event.step.value, event.outcome.value).inc()

    def applied(self, action: PlannedAction, ws: WorkloadState, now: float, result: Result) -> None:
        """The executor's ``result`` for ``action`` on ``ws`` (as read just before it)."""
        step = action.step
        laddering = step not in (LadderStep.RECLAIM, LadderStep.RESTORE)
        replicas = {LadderStep.RECLAIM: ws.replicas, LadderStep.RESTORE: original_replicas(ws)}
        self.record(
            RemediationEvent(
                episode=action.episode,
                workload=action.workload,
                step=step,
                outcome=result.outcome,
                at=now,
                policy=action.policy,
                reason=f"{result.message}: {action.reason}",
                alert_labels=action.alert_labels,
                next_step=action.next_step if laddering else None,
                next_step_due=action.next_step_due if laddering else None,
                original_replicas=replicas.get(step),
                restore_command=restore_command(ws.ref) if step is LadderStep.RECLAIM else None,
            )
        )
        if result.outcome is StepOutcome.APPLIED and self.ledger is not None:
            if step is LadderStep.RECLAIM:
                self.ledger.set_episode_state(action.episode, EpisodeState.RECLAIMED)
            elif step is LadderStep.RESTORE:
                self.ledger.end_workload_episodes(action.workload, EpisodeState.RESTORED, now)
        if self.journal is not None:
            original = ws.replicas if step is LadderStep.RECLAIM else None
            self.journal.settle(action, result.outcome, now, original_replicas=original)

    def dropped(self, action: PlannedAction, now: float) -> None:
        """The step did not happen and needs no record (its workload is gone)."""
        if self.journal is not None:
            self.journal.release(action, now)

    def failed(self, action: PlannedAction, now: float, why: str) -> None:
        logger.warning("%s on %s failed: %s", action.step, action.workload, why)
        self.dropped(action, now)
        self.record(
            RemediationEvent(
                action.episode,
                action.workload,
                action.step,
                StepOutcome.FAILED,
                now,
                action.policy,
                why,
                action.alert_labels,
            ),
            dedupe=True,
        )

    def waits(self, waits: Sequence[Wait], now: float) -> None:
        """First each episode held for lack of evidence whose evidence is back resumes,
        said once. Then refusals and pending steps, each recorded once until what it says
        changes, once per episode whichever leader recorded it; a hold for lack of
        evidence once per outage."""
        refused = 0
        self._resume({w.episode for w in waits if w.kind is HoldKind.OUTAGE}, now)
        for wait in waits:
            if wait.workload is None:
                logger.info("waiting: %s", wait.reason)
                continue
            refused += wait.refused
            if wait.kind is not HoldKind.OUTAGE and not wait.refused and wait.next_step is None:
                continue
            if not self._news(wait, now):
                continue
            outage = wait.kind is HoldKind.OUTAGE
            self.record(_wait_event(wait, wait.workload, now), dedupe=not outage)
        self.metrics.waits.set(refused)

    def _news(self, wait: Wait, now: float) -> bool:
        """Whether ``wait`` says something not said yet in its episode: the shared record
        decides where there is one, else this replica's ledger."""
        if self.journal is not None and wait.episode:
            said = self.journal.note_wait(wait, now)
            if said is not None:
                return said
        if wait.kind is HoldKind.OUTAGE and self.ledger is not None:
            return wait.episode not in self.ledger.unresumed_holds()
        return True

    def _resume(self, held_now: set[str], now: float) -> None:
        """The episodes held for lack of evidence that are not held this cycle: resumed,
        said once (the shared record's outage ends; else this replica's ledger's)."""
        shared: set[str] = set()
        if self.journal is not None:
            for rec in self.journal.held():
                shared.add(rec.episode)
                if rec.episode in held_now or rec.outage is None:
                    continue
                if self.journal.resume(rec.episode, now) is not None:
                    self.record(_resume_event(rec, rec.outage.since, now))
        if self.ledger is None:
            return
        for episode, hold in self.ledger.unresumed_holds().items():
            if episode in held_now or episode in shared:
                continue
            if self.journal is not None and self.journal.get(episode) is not None:
                continue  # the shared record says whether it resumed
            self.record(_resume_event(hold, hold.at, now))


def _wait_event(wait: Wait, workload: WorkloadRef, now: float) -> RemediationEvent:
    step = {HoldKind.OUTAGE: LadderStep.HOLD, HoldKind.GAVE_UP: LadderStep.GIVE_UP}.get(
        wait.kind, wait.next_step or LadderStep.GRACE
    )
    reason = wait.reason
    if wait.kind is HoldKind.OUTAGE:
        reason = (
            f"held: no evidence since {rfc3339(now)} ({wait.reason}); the episode stays "
            "as it is until its evidence is back"
        )
    return RemediationEvent(
        wait.episode,
        workload,
        step,
        StepOutcome.REFUSED if wait.refused else StepOutcome.PLANNED,
        now,
        wait.policy,
        reason,
        wait.alert_labels,
        next_step=wait.next_step,
        next_step_due=wait.next_step_due,
        hold=wait.kind,
    )


def _resume_event(
    held: SharedEpisode | RemediationEvent, since: float, now: float
) -> RemediationEvent:
    why = (
        f"resumed: its evidence is back (held {format_duration(now - since)} since "
        f"{rfc3339(since)})"
    )
    return RemediationEvent(
        held.episode,
        held.workload,
        LadderStep.RESUME,
        StepOutcome.APPLIED,
        now,
        held.policy,
        why,
        held.alert_labels,
        hold=HoldKind.RESUMING,
    )
