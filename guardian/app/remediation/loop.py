"""The remediation loop: after each rule-group evaluation, plan and apply one cycle.

Wiring (app/controller.py): ``engine.listeners.append(loop.on_evaluation)``. The loop
keeps each group's last evaluation health, and at most once per ``cycle_interval`` of
evaluation time it reads the cluster, plans (pure), and applies the plan. Just before
each step it reads the workload again and re-plans it alone; a 409 does the same
(step_runner.py). Every step and every new refusal goes to the ledger as a
RemediationEvent. Alerts of another cluster, and alerts whose pod is not the pod read
from the cluster, are refused before any workload is looked at (clusters.py). With
Alertmanagers configured, each cycle first asks them which of its alerts are silenced or
inhibited (``suppressions``; app/alertmanager/silence_gather.py).

With a ``journal`` (every ``guardian run``), past steps come from the episode state
shared in the cluster (journal.py), which a new leader reads on its first cycle; each
step is claimed there just before it is applied and settled after it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from guardian.adapters.kube.executor import PARTLY_IDLE_EVENT, Executor
from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest, NotFound
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.clusters import ClusterFilter
from guardian.app.remediation.journal import EpisodeJournal, StepTaken
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.pending_pods import PendingPods
from guardian.app.remediation.policy_objects import PolicyObjects
from guardian.app.remediation.reconcile import Reconciler
from guardian.app.remediation.recording import StepRecorder
from guardian.app.remediation.step_runner import Ready, StepRunner, WriteClock
from guardian.engine.remediation import Cycle, PlannerSettings, is_pipeline, plan
from guardian.engine.remediation.delegation import enforcing as enforcing_policies
from guardian.engine.remediation.guards import group_health
from guardian.engine.remediation.scope import check_pods
from guardian.model.alerts import GroupEvaluation
from guardian.model.policies import Annotations, ReclaimPolicy
from guardian.model.reclaim import (
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    LedgerView,
    Plan,
    PlannedAction,
    Wait,
    WorkloadState,
)
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.suppressions import NOT_CHECKED, Suppressions
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

# The cycle's alerts in, Alertmanager's silences and inhibitions for them out.
SuppressionSource = Callable[[Sequence[FiringAlert]], Suppressions]


@dataclass(frozen=True)
class LoopParts:
    """What a loop reads and writes through: the cluster (reader, executor), the ledger,
    the episode state the replicas share, and the cluster filter."""

    reader: KubeReader
    executor: Executor
    ledger: Ledger
    journal: EpisodeJournal | None = None
    clusters: ClusterFilter | None = None


@dataclass(frozen=True)
class LoopSource:
    """The engine's side: its alerts now, whether every group has been evaluated since it
    started, and whether this replica leads."""

    alerts: Callable[[], Sequence[FiringAlert]]
    ready: Callable[[], bool] = lambda: True
    is_leader: Callable[[], bool] = lambda: True


@dataclass(frozen=True)
class LoopSettings:
    planner: PlannerSettings
    controller_namespace: str
    cycle_interval: float = 60.0  # evaluation time between two cycles
    write_clock: WriteClock = field(default_factory=WriteClock)  # a step's time: its write's


class RemediationLoop:
    def __init__(
        self,
        policies: Sequence[ReclaimPolicy],
        parts: LoopParts,
        source: LoopSource,
        settings: LoopSettings,
        metrics: RemediationMetrics | None = None,
    ) -> None:
        self.policies = list(policies)
        self.reader = parts.reader
        self.executor = executor = parts.executor
        self.ledger = ledger = parts.ledger
        self.alerts = source.alerts
        self.planner = settings.planner
        self.controller_namespace = settings.controller_namespace
        self.cycle_interval = settings.cycle_interval
        self.write_clock = settings.write_clock
        self.metrics = metrics or RemediationMetrics()
        self.is_leader = source.is_leader
        self.journal = journal = parts.journal
        self.ready = source.ready
        self.recorder = StepRecorder(ledger, self.metrics, journal)
        self.reconciler = Reconciler(ledger, self.recorder, executor.events, journal)
        self.clusters = parts.clusters or ClusterFilter(metrics=self.metrics)
        self.health: dict[str, GroupHealth] = {}
        self.suppressions: SuppressionSource = lambda _alerts: NOT_CHECKED
        self.held: Suppressions = NOT_CHECKED  # this cycle's answer
        self.last_cycle: float | None = None
        self._lock = threading.Lock()
        # Policies as cluster objects and the Pending pods, when watched (build.py).
        self.policy_objects: PolicyObjects | None = None
        self.pending_pods: PendingPods | None = None
        self.status_writer: KubeRest | None = None  # the fenced client for policy status

    @property
    def steps(self) -> StepRunner:
        """How a step is applied (``guardian restore`` goes the same way)."""
        return StepRunner(self.executor, self.recorder, self.write_clock)

    # ---------------------------------------------------------------- entry points
    def on_evaluation(self, evaluation: GroupEvaluation) -> None:
        """The engine's listener: record the group's health, maybe run a cycle."""
        with self._lock:
            self.health[evaluation.group] = group_health(evaluation)
            if evaluation.group in self.planner.pipeline_groups:
                return
            due = self.last_cycle is None or evaluation.ts - self.last_cycle >= self.cycle_interval
        if due:
            self.run_cycle(evaluation.ts)

    def replace_policies(self, policies: Iterable[ReclaimPolicy]) -> None:
        with self._lock:
            self.policies = list(policies)
            if self.policy_objects is not None:
                self.policy_objects.set_files(self.policies)

    def run_cycle(self, now: float) -> Plan | None:
        with self._lock:
            if not self.is_leader():
                logger.info("not the leader: skipping the remediation cycle at %.3f", now)
                return None
            if not self.ready():  # an alert not evaluated yet has not ended: close nothing
                logger.info("waiting for every rule group's first evaluation before a cycle")
                return None
            try:
                return self._cycle(now)
            except NotLeader as exc:  # the fence: stop writing at once, whatever was next
                logger.error("remediation cycle at %.3f stopped: %s", now, exc)
                return None

    def _cycle(self, now: float) -> Plan | None:
        if self.journal is not None:
            try:
                self.journal.refresh()
            except GuardianError as exc:  # never act without knowing what was done
                logger.error("shared episode state unreadable: skipping the cycle: %s", exc)
                return None
        self.last_cycle = now
        self.metrics.cycles.inc()
        if self.policy_objects is not None:  # created, changed, deleted: in force now
            self.policies = self.policy_objects.policies()
        alerts, refused = self.clusters.split(self._relevant(self.alerts()), now)
        self.held = self.suppressions(alerts)
        snapshot = self._snapshot(alerts, now)
        if self.pending_pods is not None:
            snapshot = dataclasses.replace(snapshot, pending_pods=self.pending_pods.current())
            snapshot = self.reader.with_nodes(snapshot)  # what waiting pods must fit
        alerts, mismatched = check_pods(alerts, snapshot)
        self.clusters.record([*refused, *mismatched], now)
        self.reconciler.run(self._view(now), snapshot, now)
        result = self._plan(alerts, snapshot, now)
        self.recorder.waits(result.waits, now)
        self._partly_idle(result.waits, snapshot, now)
        for ref, episode in result.closed_episodes:
            self._close(ref, episode, snapshot, now)
        for action in result.actions:
            try:
                self.steps.run(partial(self._recheck, action, alerts, snapshot, now), now)
            except NotLeader:
                raise
            except Exception:  # per item: one workload's failure must not stop the rest
                logger.exception("remediation step %s on %s failed", action.step, action.workload)
        if self.policy_objects is not None and self.status_writer is not None:
            self.policy_objects.write_status(self.status_writer, result, snapshot, now)
        return result

    def _partly_idle(self, waits: Sequence[Wait], snapshot: ClusterSnapshot, now: float) -> None:
        """A Kubernetes Event on each partly idle workload of an enforcing policy, once per
        episode, naming the idle and the other parts (the wait's reason)."""
        if self.planner.dry_run:
            return
        enforcing = enforcing_policies(self.policies)  # a team's: with what it inherits
        for wait in waits:
            ws = snapshot.workloads.get(wait.workload) if wait.workload else None
            if wait.partly_idle and ws is not None and wait.policy in enforcing:
                self.executor.events.record(
                    ws, PARTLY_IDLE_EVENT, wait.reason, episode=wait.episode, now=now
                )

    def journal_view(self, now: float) -> LedgerView:
        return self._view(now)

    def _view(self, now: float) -> LedgerView:
        """Past steps: the shared state's on a leader with a journal, else the ledger's."""
        return self.journal.view() if self.journal is not None else self.ledger.view(now)

    # ---------------------------------------------------------------- planning
    def current_alerts(self) -> list[FiringAlert]:
        """The engine's alerts now that some policy acts on, about this cluster."""
        return self.clusters.ours(self._relevant(self.alerts()))

    def _relevant(self, alerts: Iterable[FiringAlert]) -> list[FiringAlert]:
        """Pipeline alerts, and the alerts some policy acts on: no cluster reads for others."""
        return [
            a
            for a in alerts
            if is_pipeline(a.labels)
            or any(p.spec.alerts.matches(a.labels.to_dict()) for p in self.policies)
        ]

    def _snapshot(self, alerts: Sequence[FiringAlert], now: float) -> ClusterSnapshot:
        pods = [
            (a.labels["namespace"], a.labels["pod"])
            for a in alerts  # pending ones too: they keep their episode open
            if not is_pipeline(a.labels) and a.labels.get("namespace") and a.labels.get("pod")
        ]
        view = self._view(now)
        return self.reader.snapshot(pods, view.open_episodes, self.controller_namespace)

    def _plan(self, alerts: Sequence[FiringAlert], snapshot: ClusterSnapshot, now: float) -> Plan:
        cycle = Cycle(
            alerts, snapshot, self._view(now), now, self.health, self.held, self.clusters.gap()
        )
        return plan(cycle, self.policies, self.planner)

    def _replan_one(
        self, action: PlannedAction, snapshot: ClusterSnapshot, now: float
    ) -> tuple[PlannedAction | Wait | None, WorkloadState | None]:
        """Read the workload again and plan it alone: the evidence check just before acting."""
        ref = action.workload
        old = snapshot.workloads.get(ref)
        try:
            read = self.reader.workload(ref, old.pods if old else (), old.jobs if old else ())
            fresh = self.reader.with_members(read)  # the evidence is judged again on them
        except NotFound:
            return None, None
        workloads = dict(snapshot.workloads)
        workloads[ref] = fresh
        namespaces = dict(snapshot.namespaces)
        for name in {ref.namespace, self.controller_namespace}:
            found = self.reader.namespace(name)  # exclusions and the kill switch, now
            if found is None:
                namespaces.pop(name, None)
            else:
                namespaces[name] = found
        # The engine's alerts now, not at cycle start; their pods read again.
        alerts = self.current_alerts()
        mine = [a for a in alerts if (o := snapshot.pod_owners.get(_pod_of(a))) and o.root == ref]
        owners = dict(snapshot.pod_owners)
        owners.update({key: self.reader.resolve_pod(*key) for key in {_pod_of(a) for a in mine}})
        cycle = Cycle(
            mine + [a for a in alerts if is_pipeline(a.labels)],
            dataclasses.replace(
                snapshot, workloads=workloads, namespaces=namespaces, pod_owners=owners
            ),
            self._view(now),
            now,
            self.health,
            self.held,
        )
        again = plan(cycle, self.policies, self.planner)
        for candidate in again.actions:
            if candidate.workload == ref:
                return candidate, fresh
        for wait in again.waits:
            if wait.workload == ref:
                return wait, fresh
        return None, fresh

    # ---------------------------------------------------------------- acting
    def _recheck(
        self,
        planned: PlannedAction,
        alerts: Sequence[FiringAlert],
        snapshot: ClusterSnapshot,
        now: float,
    ) -> Ready | None:
        """``planned`` as the planner sees it now, with the workload as just read; None if
        it is gone or no longer planned (a new refusal is recorded)."""
        current, fresh = self._replan_one(planned, snapshot, now)
        if fresh is None:
            logger.info("%s is gone: dropping %s", planned.workload, planned.step)
            return None
        if not isinstance(current, PlannedAction) or current.step is not planned.step:
            why = current.reason if isinstance(current, Wait) else "no longer planned"
            logger.info("re-planned %s on %s: %s", planned.step, planned.workload, why)
            if isinstance(current, Wait) and current.refused:
                self.recorder.record(
                    RemediationEvent(
                        planned.episode,
                        planned.workload,
                        planned.step,
                        StepOutcome.REFUSED,
                        now,
                        planned.policy,
                        f"re-checked before acting: {why}",
                        planned.alert_labels,
                    ),
                    dedupe=True,
                )
            return None
        labels = current.alert_labels
        first = min((a.active_at for a in alerts if a.labels == labels), default=now)
        if current.step is not LadderStep.RESTORE:  # idempotent: the first step opens it
            self.ledger.open_episode(current.workload, current.episode, first, current.policy)
        if self.journal is not None:
            try:
                self.journal.claim(current, first, now)
            except StepTaken as exc:
                logger.info("%s on %s not applied: %s", current.step, current.workload, exc)
                return None
        return current, fresh

    def _close(self, ref: WorkloadRef, episode: str, snapshot: ClusterSnapshot, now: float) -> None:
        ws = snapshot.workloads.get(ref)
        if ws is not None and ws.annotations.get(Annotations.EPISODE) == episode:
            try:
                self.executor.unflag(ws)
            except GuardianError as exc:
                logger.warning("could not clear the idle flag on %s: %s", ref, exc)
                return
        self.ledger.set_episode_state(episode, EpisodeState.CLOSED, now)
        if self.journal is not None:
            try:
                self.journal.end(episode, EpisodeState.CLOSED, now)
            except NotLeader:
                raise
            except GuardianError as exc:  # still live there: the next cycle closes it again
                logger.warning("could not end episode %s in the shared state: %s", episode, exc)
                return
        logger.info("episode %s on %s closed: its alerts ended before a reclaim", episode, ref)


def _pod_of(alert: FiringAlert) -> tuple[str, str]:
    return alert.labels.get("namespace", ""), alert.labels.get("pod", "")
