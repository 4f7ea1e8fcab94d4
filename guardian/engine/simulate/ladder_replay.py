"""The remediation loop replayed over an alert timeline, with the real planner.

It does what ``RemediationLoop.on_evaluation`` does, with time taken from the
evaluations: it keeps each group's last health, runs a cycle at most once per
``cycle_interval`` of evaluation time (never on a pipeline group's evaluation), and
calls the same pure :func:`guardian.engine.remediation.plan` with the alerts active at
that moment. Every planned step is taken as applied at the cycle's time (every policy is
replayed as enforcing): its ledger entry is recorded and the annotations it would have
written are laid over the cluster snapshot, so grace periods, limits, warm-up and
anything else the planner reads from ``now`` (schedule windows included) advance exactly
as they would have.

History cannot say what a reclaimed workload would have done, so the caller tells the
replay when its owner would have wanted it back (:meth:`restore_at`, from the workload's
own later activity): it is then restored, which starts its warm-up as a real restore does.

The planner judges a reclaim on every pod of the workload (``WorkloadState.members``).
The cluster now holds other pods than the history did, so with a :class:`PodSource` the
replay reads each workload's pods over time from history, when the planner first takes
it to the reclaim (or refuses it): the cycle is then planned again with the pods the
workload had at that moment, and from then on at every cycle. A workload whose evidence
covers only some of it is held, as the controller holds it, and each such cycle is
logged as partly idle with its parts named (partly_idle.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

from guardian.engine.remediation import Cycle, PlannerSettings, is_pipeline, plan
from guardian.engine.remediation.guards import pipeline_reason
from guardian.engine.remediation.roots import by_root
from guardian.engine.simulate.partly_idle import Judged, partly_idle_run
from guardian.engine.simulate.replay_records import (
    Hold,
    InCluster,
    ReplayLog,
    ReplaySources,
    WouldStep,
    judged_workloads,
)
from guardian.engine.simulate.rule_replay import EvaluationRecord
from guardian.model.alerts import TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations, Mode, ReclaimPolicy
from guardian.model.reclaim import (
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    LedgerEntry,
    LedgerView,
    Plan,
    PlannedAction,
    WorkloadState,
)
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian.model.times import rfc3339

HOLD_PREFIX = "missing data is not idleness"
PlanFn = Callable[..., Plan]  # guardian.engine.remediation.plan's signature


def enforcing(policies: Sequence[ReclaimPolicy]) -> list[ReclaimPolicy]:
    """The policies as if each were switched to enforce (what the replay answers)."""
    out = []
    for policy in policies:
        spec = policy.spec.model_copy(update={"mode": Mode.ENFORCE})
        copy = policy.model_copy(update={"spec": spec})
        out.append(copy.located(policy.source))
    return out


class LadderReplay:
    def __init__(
        self,
        policies: Sequence[ReclaimPolicy],
        snapshot: ClusterSnapshot,
        settings: PlannerSettings,
        *,
        cycle_interval: float = 60.0,
        planner: PlanFn = plan,
        sources: ReplaySources | None = None,
    ) -> None:
        self.policies = enforcing(policies)
        self.planner = planner
        self.snapshot = snapshot
        self.settings = dataclasses.replace(settings, dry_run=False, kill_switch=False)
        self.cycle_interval = cycle_interval
        self.health: dict[str, GroupHealth] = {}
        self.last_cycle: float | None = None
        self.entries: list[LedgerEntry] = []
        self.open_episodes: dict[WorkloadRef, tuple[str, float, str]] = {}
        self.workloads: dict[WorkloadRef, WorkloadState] = dict(snapshot.workloads)
        self.due_restores: dict[WorkloadRef, float] = {}
        self.clusters: set[str] = set()
        self.candidates: list[InCluster] = []  # last cycle's roots, clusters
        self.parked: set[WorkloadRef] = set()  # reclaimed, until restored
        self._matches: dict[LabelSet, bool] = {}  # alert labels -> some policy acts on them
        self.sources = sources or ReplaySources()
        self.loaded: set[WorkloadRef] = set()  # their pods are read from history
        # workload -> (its last run in log.partly, the cycle it was last seen in)
        self._partly: dict[WorkloadRef, tuple[int, int]] = {}
        self.log = ReplayLog()

    # ---------------------------------------------------------------- input
    def on_evaluation(
        self, health: GroupHealth, alerts: Callable[[], Sequence[FiringAlert]]
    ) -> Plan | None:
        """The engine's listener, as the loop's: health, then maybe one cycle."""
        self.health[health.group] = health
        if health.group in self.settings.pipeline_groups:
            return None
        ts = health.ts
        if self.last_cycle is not None and ts - self.last_cycle < self.cycle_interval:
            return None
        return self.cycle(ts, alerts())

    def restore_at(self, ref: WorkloadRef, at: float) -> None:
        """The reclaimed ``ref``'s owner would have restored it at ``at``."""
        self.due_restores[ref] = at

    # ---------------------------------------------------------------- a cycle
    def cycle(self, now: float, alerts: Sequence[FiringAlert]) -> Plan:
        self.last_cycle = now
        self.log.cycles.append(now)
        self._restore_due(now)
        relevant = [
            a
            for a in alerts
            if is_pipeline(a.labels) or (not self._reclaimed(a) and self._policy_alert(a))
        ]
        result, snapshot = self._plan(relevant, self._read(relevant), now)
        self._waits(result, snapshot, relevant, now)
        for ref, _episode in result.closed_episodes:
            self._close(ref)
        self._global_holds(relevant, now)
        started = {a.labels: a.active_at for a in relevant}
        for action in result.actions:
            self._apply(action, now, started.get(action.alert_labels, now))
        return result

    def _plan(
        self,
        alerts: Sequence[FiringAlert],
        workloads: Mapping[WorkloadRef, WorkloadState],
        now: float,
    ) -> tuple[Plan, ClusterSnapshot]:
        """The planner's answer with each workload's pods as they were at ``now``: planned
        again whenever it judged the reclaim of a workload whose pods were not read yet."""
        view = self._view(now)
        while True:
            current = {ref: self._members(ws, now) for ref, ws in workloads.items()}
            snapshot = dataclasses.replace(self.snapshot, workloads=current)
            cycle = Cycle(alerts, snapshot, view, now, self.health)
            result = self.planner(cycle, self.policies, self.settings)
            pods = self.sources.pods
            wanted = (judged_workloads(result) & set(workloads)) - self.loaded
            if pods is None or not wanted:
                return result, snapshot
            self.loaded |= wanted
            clusters = dict(self.candidates)
            roots = [(ref, clusters.get(ref, "")) for ref in sorted(wanted, key=str)]
            pods.load(roots, self.candidates, now)

    def _members(self, ws: WorkloadState, now: float) -> WorkloadState:
        pods = self.sources.pods
        if pods is None or ws.ref not in self.loaded:
            return ws
        found = pods.members(ws.ref, now)
        if found is None:
            return ws
        # The replicas it had then: as many as the pods it had (the cluster's count is now's).
        replicas = len(found) if ws.replicas is not None and found else ws.replicas
        return dataclasses.replace(ws, members=found, replicas=replicas)

    def _policy_alert(self, alert: FiringAlert) -> bool:
        found = self._matches.get(alert.labels)
        if found is None:
            labels = alert.labels.to_dict()
            found = self._matches[alert.labels] = any(
                p.spec.alerts.matches(labels) for p in self.policies
            )
        return found

    def _view(self, now: float) -> LedgerView:
        """The ledger as the planner needs it. Reclaimed workloads (parked until their
        restore) are left out: the planner would only say "already reclaimed" about them
        and never restore them itself; their reclaims of the last hour stay, for limits."""
        parked = self.parked
        if not parked:
            return LedgerView(dict(self.open_episodes), tuple(self.entries))
        hour = now - 3600.0
        return LedgerView(
            {ref: e for ref, e in self.open_episodes.items() if ref not in parked},
            tuple(
                e
                for e in self.entries
                if e.workload not in parked or (e.step is LadderStep.RECLAIM and e.at >= hour)
            ),
        )

    def _read(self, alerts: Sequence[FiringAlert]) -> dict[WorkloadRef, WorkloadState]:
        """What the loop's reader would have read: the roots of the firing alerts' pods,
        and the workloads with an open episode (reclaimed ones included)."""
        owners = self.snapshot.pod_owners
        roots: dict[WorkloadRef, str] = {}
        for a in alerts:
            if a.firing and not is_pipeline(a.labels):
                owner = owners.get((a.labels.get("namespace", ""), a.labels.get("pod", "")))
                if owner is not None and owner.root is not None:
                    roots.setdefault(owner.root, a.labels.get("cluster", ""))
        self.candidates = sorted(roots.items(), key=lambda kv: str(kv[0]))
        wanted = (set(roots) | set(self.open_episodes)) - self.parked
        return {ref: self.workloads[ref] for ref in wanted if ref in self.workloads}

    def _reclaimed(self, alert: FiringAlert) -> bool:
        """The alert's workload is reclaimed (and not due back): the planner would only say
        so again, so its alerts are left out of the cycle (a replay has thousands)."""
        if not self.parked:
            return False
        owner = self.snapshot.pod_owners.get(
            (alert.labels.get("namespace", ""), alert.labels.get("pod", ""))
        )
        return owner is not None and owner.root in self.parked

    def _global_holds(self, alerts: Sequence[FiringAlert], now: float) -> None:
        """Per cluster: would pipeline health have held any action at all? (A pipeline
        alert without a node, or an unhealthy or stale pipeline group.)"""
        self.clusters.update(a.labels.get("cluster", "") for a in alerts)
        pipeline = [a for a in alerts if is_pipeline(a.labels)]
        for cluster in sorted(self.clusters or {""}):
            probe = FiringAlert(LabelSet({"cluster": cluster} if cluster else {}), now, True)
            why = pipeline_reason(
                [probe],
                pipeline,
                self.health,
                self.settings.pipeline_groups,
                now,
                self.settings.max_health_age,
            )
            if why is not None:
                self.log.holds.append(Hold(now, None, why, cluster=cluster))

    def _waits(
        self, result: Plan, snapshot: ClusterSnapshot, alerts: Sequence[FiringAlert], now: float
    ) -> None:
        """Refusals as holds; a partly idle workload in its own run, its parts named."""
        roots: dict[WorkloadRef, list[FiringAlert]] | None = None
        n = len(self.log.cycles) - 1
        for wait in result.waits:
            ws = snapshot.workloads.get(wait.workload) if wait.workload else None
            if wait.partly_idle and ws is not None:
                i, seen = self._partly.get(ws.ref, (-1, -2))
                if seen == n - 1:
                    self.log.partly[i] = self.log.partly[i].extended(now)
                    self._partly[ws.ref] = (i, n)
                    continue
                if roots is None:
                    firing = [a for a in alerts if a.firing and not is_pipeline(a.labels)]
                    roots = by_root(firing, snapshot, [])
                namespace = snapshot.namespaces.get(ws.ref.namespace)
                judged = Judged(ws, roots.get(ws.ref, []), self.policies, namespace)
                self._partly[ws.ref] = (len(self.log.partly), n)
                self.log.partly.append(partly_idle_run(wait, judged, now))
            elif wait.refused:
                self.log.holds.append(Hold(now, wait.workload, wait.reason, wait.policy))

    def _close(self, ref: WorkloadRef) -> None:
        self.open_episodes.pop(ref, None)
        ws = self.workloads.get(ref)
        if ws is not None:
            self._annotate(ws, drop=Annotations.FLAG_KEYS)

    def _apply(self, action: PlannedAction, now: float, first_active: float) -> None:
        ref = action.workload
        if action.step is not LadderStep.RESTORE and ref not in self.open_episodes:
            self.open_episodes[ref] = (action.episode, first_active, action.policy)
        self.entries.append(
            LedgerEntry(
                action.episode, ref, action.step, StepOutcome.APPLIED, now, action.policy, False
            )
        )
        self.log.steps.append(
            WouldStep(
                now,
                ref,
                action.step,
                action.policy,
                action.episode,
                action.reason,
                action.alert_labels,
                action.right_size.remove if action.right_size else (),
            )
        )
        ws = self.workloads.get(ref)
        if ws is None:
            return
        if action.step is LadderStep.ANNOTATE:
            self._annotate(
                ws, {Annotations.FLAGGED_AT: rfc3339(now), Annotations.EPISODE: action.episode}
            )
        elif action.step is LadderStep.RECLAIM:
            self.parked.add(ref)
            sized = action.right_size
            keep = 0 if sized is None else sized.keep
            self.workloads[ref] = dataclasses.replace(
                self._annotated(ws, {Annotations.RECLAIMED_AT: rfc3339(now)}),
                replicas=keep if ws.replicas is not None else None,
                suspended=sized is None,
            )
        elif action.step is LadderStep.RESTORE:
            self._restored(ws, now)

    def _restore_due(self, now: float) -> None:
        for ref, at in sorted(self.due_restores.items(), key=lambda kv: kv[1]):
            if at > now:
                continue
            del self.due_restores[ref]
            ws = self.workloads.get(ref)
            if ws is None or Annotations.RECLAIMED_AT not in ws.annotations:
                continue
            self.log.restores.append((at, ref))
            self._restored(ws, at)

    def _restored(self, ws: WorkloadState, at: float) -> None:
        self.parked.discard(ws.ref)
        original = self.snapshot.workloads.get(ws.ref, ws)
        cleared = self._annotated(
            ws,
            {Annotations.RESTORED_AT: rfc3339(at)},
            drop=Annotations.FLAG_KEYS + Annotations.RECLAIM_KEYS,
        )
        self.workloads[ws.ref] = dataclasses.replace(
            cleared, replicas=original.replicas, suspended=original.suspended
        )
        self.open_episodes.pop(ws.ref, None)

    def _annotate(
        self, ws: WorkloadState, add: Mapping[str, str] | None = None, drop: Sequence[str] = ()
    ) -> None:
        self.workloads[ws.ref] = self._annotated(ws, add or {}, drop)

    @staticmethod
    def _annotated(
        ws: WorkloadState, add: Mapping[str, str], drop: Sequence[str] = ()
    ) -> WorkloadState:
        annotations = {k: v for k, v in ws.annotations.items() if k not in drop}
        annotations.update(add)
        return dataclasses.replace(ws, annotations=annotations)


# When the owners of the workloads reclaimed in one cycle would have wanted them back
# (absent or None: not in the range). Also given: the cycle's other candidates (roots of
# its firing alerts, with their cluster), whose usage the caller may read ahead.
RestoreTimes = Callable[
    [Sequence[WouldStep], Sequence[InCluster]], Mapping[WorkloadRef, float | None]
]


def replay_ladder(
    replay: LadderReplay, evaluations: Iterable[EvaluationRecord], restore_times: RestoreTimes
) -> ReplayLog:
    """Feed an alert timeline to ``replay`` as the engine feeds the loop, evaluation by
    evaluation, with the alerts active at each; ask ``restore_times`` about each cycle's
    reclaims."""
    active: dict[tuple[str, LabelSet], FiringAlert] = {}
    for record in evaluations:
        for t in record.transitions:
            key = (t.group, t.labels)
            if t.kind is TransitionKind.RESOLVED:
                active.pop(key, None)
            else:
                firing = t.kind is TransitionKind.FIRING
                window = replay.sources.windows.get((t.group, t.rule), 0.0)
                active[key] = FiringAlert(t.labels, t.active_at, firing, t.group, t.value, window)
        result = replay.on_evaluation(record.health, lambda: list(active.values()))
        if result is None:
            continue
        reclaims = []
        for step in reversed(replay.log.steps):
            if step.at < result.now:
                break
            if step.step is LadderStep.RECLAIM:
                reclaims.append(step)
        if not reclaims:
            continue
        for ref, back in restore_times(reclaims[::-1], replay.candidates).items():
            if back is not None:
                replay.restore_at(ref, back)
    return replay.log
