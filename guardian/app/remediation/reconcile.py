"""Before planning: what happened in the cluster that this replica has not recorded.

State lives on the object. A step applied before a crash or by a leader that died
before it settled (its claim still in flight) is recorded from the cluster, with the
time the object says, and never done again: the annotate and reclaim steps by their
annotations, notify by its Event. A reclaimed workload that was restored outside the
ladder (``guardian restore`` from another replica or a laptop, or by hand) ends its
episode as restored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from guardian.adapters.kube.events import EventRecorder
from guardian.adapters.kube.executor import event_reason, original_replicas, restore_command
from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.journal import FOUND, EpisodeJournal
from guardian.app.remediation.recording import StepRecorder
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import ClusterSnapshot, LedgerView, PlannedAction, WorkloadState
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from guardian.model.shared_episode import EpisodeState, SharedEpisode
from guardian.model.times import parse_rfc3339
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

FOUND_APPLIED = "found applied in the cluster after a restart"
RESTORED_OUTSIDE = "restored outside the ladder (guardian restore, or by hand)"


@dataclass(frozen=True)
class _Found:
    """One step found done on the cluster."""

    episode: str
    ws: WorkloadState
    step: LadderStep
    at: float
    policy: str
    labels: LabelSet


@dataclass(eq=False)
class Reconciler:
    ledger: Ledger
    recorder: StepRecorder
    events: EventRecorder
    journal: EpisodeJournal | None = None

    def run(self, view: LedgerView, snapshot: ClusterSnapshot, now: float) -> None:
        for ref, (episode, _started, policy) in view.open_episodes.items():
            ws = snapshot.workloads.get(ref)
            if ws is None:
                continue
            try:
                self._one(view, ws, episode, policy, now)
            except NotLeader:
                raise
            except GuardianError as exc:  # per episode: the next cycle looks again
                logger.warning("could not reconcile episode %s on %s: %s", episode, ref, exc)

    def _one(
        self, view: LedgerView, ws: WorkloadState, episode: str, policy: str, now: float
    ) -> None:
        record = self.journal.get(episode) if self.journal is not None else None
        labels = record.alert_labels if record is not None else LabelSet()
        if record is not None and record.state is EpisodeState.RECLAIMED:
            if Annotations.RECLAIMED_AT not in ws.annotations:
                self._restored(record, ws, now)
            return
        done = view.steps(episode, real=True)
        for step, at in self._on_object(ws, episode, record):
            if step not in done:
                self._found(_Found(episode, ws, step, at, policy, labels), now)

    def _on_object(
        self, ws: WorkloadState, episode: str, record: SharedEpisode | None
    ) -> list[tuple[LadderStep, float]]:
        """The steps of ``episode`` the cluster shows, with when they happened."""
        found: list[tuple[LadderStep, float]] = []
        flying = record.inflight if record is not None else None
        if (
            flying is not None
            and flying.step is LadderStep.NOTIFY
            and self.journal is not None
            and flying.by != self.journal.identity
            and self.events.recorded(ws, event_reason(LadderStep.NOTIFY), episode)
        ):
            found.append((LadderStep.NOTIFY, flying.at))
        if ws.annotations.get(Annotations.EPISODE) != episode:
            return found
        for step, key in (
            (LadderStep.ANNOTATE, Annotations.FLAGGED_AT),
            (LadderStep.RECLAIM, Annotations.RECLAIMED_AT),
        ):
            at = parse_rfc3339(ws.annotations.get(key))
            if at is not None:
                found.append((step, at))
        return found

    def _found(self, f: _Found, now: float) -> None:
        reclaim = f.step is LadderStep.RECLAIM
        replicas = original_replicas(f.ws) if reclaim else None
        self.recorder.record(
            RemediationEvent(
                f.episode,
                f.ws.ref,
                f.step,
                StepOutcome.APPLIED,
                f.at,
                f.policy,
                FOUND_APPLIED,
                f.labels,
                original_replicas=replicas,
                restore_command=restore_command(f.ws.ref) if reclaim else None,
            )
        )
        if reclaim:
            self.ledger.set_episode_state(f.episode, EpisodeState.RECLAIMED)
        if self.journal is not None:
            action = PlannedAction(
                f.ws.ref, f.step, f.policy, f.episode, FOUND_APPLIED, False, f.labels
            )
            self.journal.settle(
                action, StepOutcome.APPLIED, f.at, original_replicas=replicas, by=FOUND
            )

    def _restored(self, record: SharedEpisode, ws: WorkloadState, now: float) -> None:
        at = parse_rfc3339(ws.annotations.get(Annotations.RESTORED_AT))
        if at is None:
            return  # our marks removed by hand: the planner closes the episode
        known = any(
            e.step is LadderStep.RESTORE and e.outcome is StepOutcome.APPLIED
            for e in self.ledger.events_for([record.episode])
        )
        if not known:
            self.recorder.record(
                RemediationEvent(
                    record.episode,
                    ws.ref,
                    LadderStep.RESTORE,
                    StepOutcome.APPLIED,
                    at,
                    record.policy,
                    RESTORED_OUTSIDE,
                    record.alert_labels,
                )
            )
        self.ledger.end_workload_episodes(ws.ref, EpisodeState.RESTORED, at)
        if self.journal is not None:
            self.journal.end(record.episode, EpisodeState.RESTORED, now)
        logger.info("episode %s on %s: %s", record.episode, ws.ref, RESTORED_OUTSIDE)
