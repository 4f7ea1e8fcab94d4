"""Write the cycle's steps, waits and failures to the ledger, and count them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from guardian.adapters.kube.executor import restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.model.labels import LabelSet
from guardian.model.reclaim import PlannedAction, Wait, WorkloadState
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef

logger = logging.getLogger(__name__)


class StepRecorder:
    def __init__(self, ledger: Ledger, metrics: RemediationMetrics) -> None:
        self.ledger = ledger
        self.metrics = metrics

    def event(
        self,
        ref: WorkloadRef,
        episode: str,
        step: LadderStep,
        outcome: StepOutcome,
        at: float,
        policy: str,
        reason: str,
        *,
        labels: LabelSet | None = None,
        ws: WorkloadState | None = None,
        original: int | None = None,
        next_step: LadderStep | None = None,
        due: float | None = None,
        dedupe: bool = False,
    ) -> None:
        """Append one RemediationEvent (with ``dedupe``: unless it repeats the last one)."""
        reclaim = ws is not None and step is LadderStep.RECLAIM
        event = RemediationEvent(
            episode=episode,
            workload=ref,
            step=step,
            outcome=outcome,
            at=at,
            policy=policy,
            reason=reason,
            alert_labels=labels if labels is not None else LabelSet(),
            next_step=next_step,
            next_step_due=due,
            original_replicas=original,
            restore_command=restore_command(ws) if reclaim and ws is not None else None,
        )
        if self.ledger.record(event, dedupe=dedupe) is not None:
            self.metrics.steps.labels(policy or "-", step.value, outcome.value).inc()

    def applied(
        self,
        action: PlannedAction,
        ws: WorkloadState,
        now: float,
        outcome: StepOutcome,
        message: str,
    ) -> None:
        reclaim = action.step is LadderStep.RECLAIM
        laddering = action.step not in (LadderStep.RECLAIM, LadderStep.RESTORE)
        self.event(
            action.workload,
            action.episode,
            action.step,
            outcome,
            now,
            action.policy,
            f"{message}: {action.reason}",
            labels=action.alert_labels,
            ws=ws if reclaim else None,
            original=ws.replicas if reclaim else None,
            next_step=action.next_step if laddering else None,
            due=action.next_step_due if laddering else None,
        )
        if outcome is not StepOutcome.APPLIED:
            return
        if reclaim:
            self.ledger.set_episode_state(action.episode, EpisodeState.RECLAIMED)
        elif action.step is LadderStep.RESTORE:
            self.ledger.end_workload_episodes(action.workload, EpisodeState.RESTORED, now)

    def failed(self, action: PlannedAction, now: float, why: str) -> None:
        logger.warning("%s on %s failed: %s", action.step, action.workload, why)
        self.event(
            action.workload,
            action.episode,
            action.step,
            StepOutcome.FAILED,
            now,
            action.policy,
            why,
            labels=action.alert_labels,
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
            if wait.refused or wait.next_step is not None:
                self.event(
                    wait.workload,
                    wait.episode,
                    wait.next_step or LadderStep.GRACE,
                    StepOutcome.REFUSED if wait.refused else StepOutcome.PLANNED,
                    now,
                    wait.policy,
                    wait.reason,
                    labels=wait.alert_labels,
                    next_step=wait.next_step,
                    due=wait.next_step_due,
                    dedupe=True,
                )
        self.metrics.waits.set(refused)
