"""Write the cycle's steps, waits and failures to the ledger (and, on a leader, to the
shared episode state), and count them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from guardian.adapters.kube.executor import Result, original_replicas, restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.model.reclaim import PlannedAction, Wait, WorkloadState
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome

logger = logging.getLogger(__name__)


class StepRecorder:
    """Events go to ``ledger``; without one (``guardian restore`` given no state) nowhere.
    With a ``journal``, each step's outcome also settles (or releases) its shared claim."""

    def __init__(
        self,
        ledger: Ledger | None,
        metrics: RemediationMetrics,
        journal: EpisodeJournal | None = None,
    ) -> None:
        self.ledger = ledger
        self.metrics = metrics
        self.journal = journal

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
        """Refusals and pending steps, each recorded once until its reason changes (a
        pending step once per episode whichever leader recorded it)."""
        refused = 0
        for wait in waits:
            if wait.workload is None:
                logger.info("waiting: %s", wait.reason)
                continue
            refused += wait.refused
            if not wait.refused and wait.next_step is None:
                continue
            planned = not wait.refused and wait.episode
            if planned and self.journal is not None and not self.journal.note_planned(wait, now):
                continue
            self.record(
                RemediationEvent(
                    wait.episode,
                    wait.workload,
                    wait.next_step or LadderStep.GRACE,
                    StepOutcome.REFUSED if wait.refused else StepOutcome.PLANNED,
                    now,
                    wait.policy,
                    wait.reason,
                    wait.alert_labels,
                    next_step=wait.next_step,
                    next_step_due=wait.next_step_due,
                ),
                dedupe=True,
            )
        self.metrics.waits.set(refused)
