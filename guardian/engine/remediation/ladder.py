"""The escalation ladder: notify → annotate → grace → reclaim, and restore on exclusion.

``plan`` is pure: alerts, policies, a cluster snapshot, the ledger's view and ``now`` in,
a plan out. Each workload advances at most one step per cycle; a reclaim needs an earlier
notification of the same episode, older than the grace period; every guard that says no
is recorded as a Wait with its reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from guardian.engine.remediation.candidate import Candidate, resume_wait
from guardian.engine.remediation.delegation import Governing, governing
from guardian.engine.remediation.evidence import coverage
from guardian.engine.remediation.gates import (
    Handshake,
    checkpoint,
    demand_wait,
    notify_outside,
    requested_at,
    window_state,
)
from guardian.engine.remediation.guards import (
    episode_over,
    exclusion_reason,
    is_pipeline,
    pipeline_reason,
    read_error,
    silence_reason,
    unevaluated,
    warmup_reason,
)
from guardian.engine.remediation.limits import Counts, reclaim_refusal
from guardian.engine.remediation.restores import restores
from guardian.engine.remediation.right_size import only, partly_idle, still_running
from guardian.engine.remediation.roots import by_root, pending_roots
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations, Mode, ReclaimPolicy
from guardian.model.reclaim import (
    Check,
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    LedgerView,
    NamespaceState,
    Plan,
    PlannedAction,
    RightSize,
    Wait,
)
from guardian.model.remediation_events import HoldKind, LadderStep, WorkloadRef, episode_id
from guardian.model.suppressions import NOT_CHECKED, Suppressions
from guardian.model.times import parse_rfc3339, rfc3339


@dataclass(frozen=True)
class PlannerSettings:
    dry_run: bool = True  # the global switch: True changes nothing anywhere
    kill_switch: bool = False
    max_actions_per_cycle: int = 10  # reclaims, over all policies
    max_health_age: float = 300.0  # a rule group evaluated longer ago than this is stale
    pipeline_groups: tuple[str, ...] = ()  # rule groups whose health every action needs


@dataclass(frozen=True)
class Cycle:
    """What one cycle plans from: the alerts (pending and firing, pipeline ones too), the
    cluster as read, the ledger's view, the time, the rule groups' last evaluations,
    Alertmanager's silences and, when the alerts may be incomplete, why
    (``evidence_gap``: then no episode closes for lack of alerts)."""

    alerts: Sequence[FiringAlert]
    snapshot: ClusterSnapshot
    ledger: LedgerView
    now: float
    health: Mapping[str, GroupHealth] = field(default_factory=dict)
    suppressions: Suppressions = NOT_CHECKED
    evidence_gap: str = ""


def workload_episode(ref: WorkloadRef, started_at: float) -> str:
    """One episode per workload: the same ID whoever computes it from the same start."""
    identity = LabelSet(
        {"namespace": ref.namespace, "kind": ref.kind, "name": ref.name, "api": ref.api_version}
    )
    return episode_id(identity, started_at)


def _earliest(alerts: Iterable[FiringAlert]) -> FiringAlert:
    return min(alerts, key=lambda a: (a.active_at, a.labels.items_sorted))


class _Planner:
    def __init__(
        self, cycle: Cycle, policies: Sequence[ReclaimPolicy], settings: PlannerSettings
    ) -> None:
        self.policies = policies
        self.snapshot = snapshot = cycle.snapshot
        self.ledger = cycle.ledger
        self.now = cycle.now
        self.health = cycle.health
        self.settings = settings
        self.pipeline_alerts = [a for a in cycle.alerts if is_pipeline(a.labels)]
        self.cycle = Counts()
        self.suppressions = cycle.suppressions  # Alertmanager's view
        self.actions: list[PlannedAction] = []
        self.waits: list[Wait] = []
        self.traces: dict[WorkloadRef, list[Check]] = {}
        ns = snapshot.namespaces.get(snapshot.controller_namespace)
        switch = ns is not None and (ns.annotations.get(Annotations.KILL_SWITCH, "") == "true")
        self.kill_switch = settings.kill_switch or switch

    @property
    def dry_run(self) -> bool:
        return self.settings.dry_run

    # ---------------------------------------------------------------- ladder
    def workload(self, ref: WorkloadRef, alerts: list[FiringAlert]) -> None:
        ws = self.snapshot.workloads.get(ref)
        if ws is None:
            failed = read_error(self.snapshot, ref)
            if failed is not None:
                self.waits.append(Wait(ref, f"could not read the workload: {failed}"))
            else:
                gone = "workload not found in the cluster (deleted?)"
                self.waits.append(Wait(ref, gone, refused=False))
            return
        namespace = self.snapshot.namespaces.get(ref.namespace)
        labels = _earliest(alerts).labels
        if namespace is None:
            # Its exclusion annotations are unknown: never act on what we could not read.
            unread = f"namespace {ref.namespace} could not be read"
            self.waits.append(Wait(ref, unread, alert_labels=labels))
            return
        chosen = governing(self.policies, alerts, ws, namespace)
        if not isinstance(chosen, Governing):
            unmatched = chosen or "no policy matches"
            self.traces[ref] = [Check("policy", False, unmatched)]
            self.waits.append(Wait(ref, unmatched, alert_labels=labels, refused=False))
            return
        policy, matched = chosen.policy, chosen.alerts
        first = _earliest(matched)
        opened = self.ledger.open_episodes.get(ref)
        episode = opened[0] if opened else workload_episode(ref, first.active_at)
        dry_run = self.settings.dry_run or policy.spec.mode is Mode.OBSERVE
        candidate = Candidate(ws, policy, episode, first, dry_run, chosen.parent, tuple(matched))
        self.traces[ref] = candidate.trace
        parent = f" (narrowing {chosen.parent.name})" if chosen.parent else ""
        candidate.ok("policy", f"{policy.name}{parent}: {len(matched)} of its alerts match")
        if Annotations.RECLAIMED_AT in ws.annotations:
            left = still_running(ws)
            if left:  # the scale-down removed other pods than the idle ones
                self.waits.append(candidate.wait(left))
                return
            reclaimed = "already reclaimed; waiting for a restore"
            self.waits.append(candidate.wait(reclaimed, refused=False))
            return
        refused = self.guard(candidate, namespace, matched)
        if refused is not None:
            self.waits.append(refused)
            return
        self.next_step(candidate)

    def guard(
        self, c: Candidate, namespace: NamespaceState, matched: Sequence[FiringAlert]
    ) -> Wait | None:
        """Why no step may touch ``c`` now (exclusions, missing evidence, silences,
        warm-up, the kill switch), or None; each gate's answer goes to its trace."""
        settings, ns = self.settings, self.snapshot.controller_namespace
        excluded = exclusion_reason(c.ws, namespace, c.policy, ns, self.now) or (
            exclusion_reason(c.ws, namespace, c.parent, ns, self.now) if c.parent else None
        )
        if excluded is not None:
            return c.wait(excluded, gate="exclusions")
        c.ok("exclusions", "not excluded, snoozed or in an excluded namespace")
        missing = pipeline_reason(
            matched,
            self.pipeline_alerts,
            self.health,
            settings.pipeline_groups,
            self.now,
            settings.max_health_age,
        )
        if missing is not None:  # held as it is until the evidence is back
            return c.wait(missing, kind=HoldKind.OUTAGE)
        c.ok("evidence health", "no pipeline alert on its nodes; its rule groups evaluate")
        answers: list[tuple[str, Callable[[], str | None]]] = [
            ("silences", lambda: silence_reason(matched, self.suppressions, c.policy)),
            ("warm-up", lambda: warmup_reason(c.ws, c.policy.spec.warmup, self.now)),
            ("kill switch", lambda: "kill switch is on: no actions" if self.kill_switch else None),
        ]
        for gate, answer in answers:
            said = answer()
            if said is not None:
                return c.wait(said, gate=gate)
            c.ok(gate, "clear")
        return None

    def _done(self, c: Candidate) -> dict[LadderStep, float]:
        done = self.ledger.steps(c.episode, real=not c.dry_run)
        # State lives on the object: an annotate the ledger missed (crash) still counts.
        if c.ws.annotations.get(Annotations.EPISODE) == c.episode and not c.dry_run:
            flagged = parse_rfc3339(c.ws.annotations.get(Annotations.FLAGGED_AT))
            if flagged is not None:
                done.setdefault(LadderStep.ANNOTATE, flagged)
        return done

    def next_step(self, c: Candidate) -> None:
        ladder = c.policy.spec.ladder
        done = self._done(c)
        if any(at >= self.now for at in done.values()):
            self.waits.append(c.wait("one ladder step per cycle", refused=False))
            return
        if LadderStep.RECLAIM in done:
            # Only a dry-run reclaim leaves the workload running: say it once per episode.
            again = "reclaim already done (or planned in dry-run) in this episode"
            self.waits.append(c.wait(again, refused=False))
            return
        notified = done.get(LadderStep.NOTIFY)
        due = (notified if notified is not None else self.now) + ladder.grace_period
        reclaim_next = LadderStep.RECLAIM if ladder.reclaim else None
        evidence = f"{c.alert.alertname} firing since {rfc3339(c.alert.active_at)}"
        window = window_state(c.policy, c.parent, self.now)
        annotate_next = ladder.annotate and LadderStep.ANNOTATE not in done
        if not window.open and not (
            ladder.notify and notified is None and notify_outside(c.policy, c.parent)
        ):
            nxt = (
                LadderStep.NOTIFY
                if ladder.notify and notified is None
                else LadderStep.ANNOTATE
                if annotate_next
                else reclaim_next
            )
            opens = c.when(due, self.now) if nxt is LadderStep.RECLAIM else window.opens_at
            self.waits.append(c.hold(window.why(), HoldKind.WINDOW, nxt, opens))
            return
        if ladder.notify and notified is None:
            # The step to count down to: the reclaim after the grace period, at the first
            # time the windows allow (the annotate is no wait: the next cycle they allow).
            nxt, at = (
                (reclaim_next, c.when(due, self.now))
                if reclaim_next is not None or not ladder.annotate
                else (LadderStep.ANNOTATE, c.soonest(self.now))
            )
            reason = f"{evidence}; policy {c.policy.name}"
            self.actions.append(c.step(LadderStep.NOTIFY, reason, nxt, at))
            return
        if annotate_next:
            self.actions.append(
                c.step(
                    LadderStep.ANNOTATE, f"{evidence}; flagged", reclaim_next, c.when(due, self.now)
                )
            )
            return
        if not ladder.reclaim:
            self.waits.append(c.wait("the policy's ladder ends before reclaim", refused=False))
            return
        if notified is None or self.now < due:
            self.waits.append(c.grace(due, self.now))
            return
        c.ok("active windows", "open" if window.windows else "none set")
        grace = f"grace {ladder.grace_period:.0f}s over"
        c.ok("grace period", f"notified at {rfc3339(notified)}, {grace}")
        self.reclaim(c, f"{evidence}; notified at {rfc3339(notified)}, {grace}", notified, done)

    def reclaim(
        self, c: Candidate, reason: str, notified: float, done: dict[LadderStep, float]
    ) -> None:
        resuming = resume_wait(c, self.ledger.outages.get(c.episode), self.now)
        if resuming is not None:
            self.waits.append(resuming)
            return
        # The evidence must cover the whole root before anything asks it to stop.
        covered = coverage(c.ws, c.matched, self.now)
        sized: RightSize | None = None
        if not covered.whole:
            decided = partly_idle(c, covered)
            if isinstance(decided, Wait):
                self.waits.append(decided)
                return
            sized = decided
            whole = (
                f"right-size: {len(sized.remove)} of {c.ws.replicas} pods idle "
                f"({', '.join(sized.remove)}), {sized.keep} kept"
            )
        else:
            whole = f"all {len(covered.pods)} pods idle" if len(covered.pods) > 1 else ""
        c.ok("whole workload", whole or "its pod is idle")
        reason = f"{reason}; {whole}" if whole else reason
        freed = c.ws if sized is None else only(c.ws, sized.remove)
        waiting, who = demand_wait(c.policy, freed, self.snapshot, self.now)
        if waiting is not None:
            self.waits.append(c.hold(waiting, HoldKind.DEMAND, LadderStep.RECLAIM))
            return
        c.ok("demand", who.lstrip("; ") or "not asked for (reclaim.when: always)")
        refusal = reclaim_refusal(
            c, self.cycle, self.ledger, self.settings.max_actions_per_cycle, self.now
        )
        if refusal is not None:
            self.waits.append(c.wait(refusal, gate="limits"))
            return
        c.ok("limits", "within the policy's and the cycle's limits")
        self.handshake(c, f"{reason}{who}", notified, done, sized)

    def handshake(
        self,
        c: Candidate,
        reason: str,
        notified: float,
        done: dict[LadderStep, float],
        sized: RightSize | None,
    ) -> None:
        """The checkpoint handshake, then the reclaim (or the right-size) itself."""
        asked = requested_at(c.ws, done.get(LadderStep.CHECKPOINT), notified)
        move = checkpoint(c.policy, c.ws, asked, self.now)
        why = move.why
        if move.kind is Handshake.REQUEST:
            nxt = c.step(LadderStep.CHECKPOINT, f"{reason}; {why}", LadderStep.RECLAIM)
            self.actions.append(dataclasses.replace(nxt, next_step_due=move.deadline))
            return
        if move.kind is Handshake.WAIT:
            self.waits.append(c.hold(why, HoldKind.CHECKPOINT, LadderStep.RECLAIM, move.deadline))
            return
        if move.kind is Handshake.GIVE_UP:
            self.waits.append(c.wait(why, kind=HoldKind.GAVE_UP))
            return
        c.ok("checkpoint", why.lstrip("; ") or "not asked for")
        self.cycle.reclaims += 1
        self.cycle.per_policy[c.policy.name] += 1
        self.cycle.per_namespace[c.ws.ref.namespace] += 1
        step = c.step(LadderStep.RECLAIM, f"{reason}{why}")
        self.actions.append(dataclasses.replace(step, right_size=sized))


def plan(
    cycle: Cycle, policies: Sequence[ReclaimPolicy], settings: PlannerSettings | None = None
) -> Plan:
    """The plan for ``cycle``. Only firing, non-pipeline alerts start or advance a ladder;
    Alertmanager's silences hold ladder steps, never a restore."""
    settings = settings or PlannerSettings()
    planner = _Planner(cycle, policies, settings)
    restores(cycle.snapshot, cycle.now, planner)
    firing = [a for a in cycle.alerts if a.firing and not is_pipeline(a.labels)]
    roots = by_root(firing, cycle.snapshot, planner.waits)
    for ref in sorted(roots, key=str):
        planner.workload(ref, roots[ref])
    # A pending alert keeps its episode open: an engine that restarted without its state
    # fires it again after `for`, and the ladder goes on where it was.
    held = set(roots) | pending_roots(cycle.alerts, cycle.snapshot)
    closed = _closed(cycle, settings, held, planner.waits)
    checks = {ref: tuple(trace) for ref, trace in planner.traces.items()}
    return Plan(cycle.now, tuple(planner.actions), tuple(planner.waits), closed, checks)


def _closed(
    cycle: Cycle, settings: PlannerSettings, held: set[WorkloadRef], waits: list[Wait]
) -> tuple[tuple[WorkloadRef, str], ...]:
    """The open episodes whose alerts ended, shown by a healthy evaluation; the others
    whose alerts cannot be seen now are held as they are (a Wait in ``waits``)."""
    groups = set(cycle.health) | set(settings.pipeline_groups)
    gap = cycle.evidence_gap or unevaluated(
        groups, cycle.health, cycle.now, settings.max_health_age
    )
    closed: list[tuple[WorkloadRef, str]] = []
    for ref, (episode, _started, policy) in sorted(
        cycle.ledger.open_episodes.items(), key=lambda kv: str(kv[0])
    ):
        if not episode_over(ref, cycle.snapshot, ref in held):
            continue
        if gap and ref in cycle.snapshot.workloads:
            # Alerts that could not be evaluated have not ended: hold the episode as it is.
            why = f"its alerts cannot be seen now: {gap}"
            waits.append(Wait(ref, why, policy, episode, refused=False, kind=HoldKind.OUTAGE))
            continue
        closed.append((ref, episode))
    return tuple(closed)
