"""Write the cycle's steps, waits and failures to the ledger, and count them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from guardian.adapters.kube.executor import Result, original_replicas, restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.model.reclaim import PlannedAction, Wait, WorkloadState
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome

logger = logging.getLogger(__name__)


class StepRecorder:
    """Events go to ``ledger``; without one (``guardian restore`` given no state) nowhere."""

    def __init__(self, ledger: Ledger | None, metrics: RemediationMetrics) -> None:
        self.ledger = ledger
        self.metrics = metrics

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
        if result.outcome is not StepOutcome.APPLIED or self.ledger is None:
            return
        if step is LadderStep.RECLAIM:
            self.ledger.set_episode_state(action.episode, EpisodeState.RECLAIMED)
        elif step is LadderStep.RESTORE:
            self.ledger.end_workload_episodes(action.workload, EpisodeState.RESTORED, now)

    def failed(self, action: PlannedAction, now: float, why: str) -> None:
        logger.warning("%s on %s failed: %s", action.step, action.workload, why)
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
        """Refusals and pending steps, each recorded once until its reason changes."""
        refused = 0
        for wait in waits:
            if wait.workload is None:
                logger.info("waiting: %s", wait.reason)
                continue
            refused += wait.refused
            if not wait.refused and wait.next_step is None:
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
