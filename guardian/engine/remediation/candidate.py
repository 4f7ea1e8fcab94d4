"""A workload a policy acts on, in its episode: the planner's steps and waits are made
from it, each with its policy, episode and alert labels, and timed by its windows."""

from __future__ import annotations

from dataclasses import dataclass, field

from guardian.engine.remediation.gates import window_state
from guardian.model.policies import HpaPolicy, ReclaimPolicy
from guardian.model.reclaim import (
    ActionKind,
    Check,
    FiringAlert,
    PlannedAction,
    Wait,
    WorkloadState,
)
from guardian.model.remediation_events import HoldKind, LadderStep
from guardian.model.times import rfc3339

# The gate a wait of each kind stops at, as ``guardian explain`` names it.
GATES = {
    HoldKind.GRACE: "grace period",
    HoldKind.WINDOW: "active windows",
    HoldKind.DEMAND: "demand",
    HoldKind.CHECKPOINT: "checkpoint",
    HoldKind.GAVE_UP: "checkpoint",
    HoldKind.EVIDENCE: "whole workload",
    HoldKind.OUTAGE: "evidence health",
    HoldKind.RESUMING: "evidence health",
    HoldKind.GUARD: "guards",
    HoldKind.STEP: "ladder",
}


@dataclass(frozen=True)
class Candidate:
    """A workload a policy acts on, in its episode: its steps and waits are planned from it."""

    ws: WorkloadState
    policy: ReclaimPolicy
    episode: str
    alert: FiringAlert  # the earliest matched alert: its labels go with every step
    dry_run: bool
    parent: ReclaimPolicy | None = None  # the cluster policy a team's policy narrows
    matched: tuple[FiringAlert, ...] = ()  # every alert of the root the policy acts on
    trace: list[Check] = field(default_factory=list, compare=False)  # the gates asked

    def ok(self, gate: str, detail: str) -> None:
        """A gate that let the workload through."""
        self.trace.append(Check(gate, True, detail))

    def step(
        self, step: LadderStep, reason: str, nxt: LadderStep | None = None, due: float | None = None
    ) -> PlannedAction:
        spec = self.policy.spec
        self.trace.append(Check(step.value, True, reason))
        return PlannedAction(
            self.ws.ref,
            step,
            self.policy.name,
            self.episode,
            reason,
            self.dry_run,
            self.alert.labels,
            nxt,
            due,
            hpa_record=self.ws.hpa is not None and spec.hpa is HpaPolicy.RECORD,
            delete_pod=self.ws.action is ActionKind.POD and spec.allow_pod_deletion,
        )

    def wait(
        self, reason: str, *, refused: bool = True, kind: HoldKind | None = None, gate: str = ""
    ) -> Wait:
        kind = kind or (HoldKind.GUARD if refused else HoldKind.STEP)
        self.trace.append(Check(gate or GATES[kind], False, reason))
        ep, labels = self.episode, self.alert.labels
        return Wait(self.ws.ref, reason, self.policy.name, ep, labels, refused, kind=kind)

    def hold(
        self, reason: str, kind: HoldKind, nxt: LadderStep | None, due: float | None = None
    ) -> Wait:
        """Not due yet: what it waits for, the next step and when (``due``: None when no
        time is known, as for demand)."""
        self.trace.append(Check(GATES[kind], False, reason))
        ep, labels = self.episode, self.alert.labels
        return Wait(self.ws.ref, reason, self.policy.name, ep, labels, False, nxt, due, kind=kind)

    def when(self, due: float, now: float) -> float:
        """The first time at or after ``due`` (and ``now``) that the windows allow a step."""
        return window_state(self.policy, self.parent, max(due, now)).opens_at

    def grace(self, due: float, now: float) -> Wait:
        """The grace period runs until ``due``; the reclaim waits for the windows too."""
        at = self.when(due, now)
        why = f"grace period: reclaim due at {rfc3339(at)}"
        if at > due:
            closed = window_state(self.policy, self.parent, due).why()
            why = f"grace period ends at {rfc3339(due)}; {closed}"
        return self.hold(why, HoldKind.GRACE, LadderStep.RECLAIM, at)

    def soonest(self, now: float) -> float | None:
        """When the next step can follow this one: the next cycle (None) or, outside the
        windows, their next opening."""
        window = window_state(self.policy, self.parent, now)
        return None if window.open else window.opens_at


def resume_wait(c: Candidate, outage: tuple[float, float | None] | None, now: float) -> Wait | None:
    """After a spell without evidence (``outage``: since, resumed at), a reclaim waits for
    one healthy evaluation, and after one longer than the policy's ``reproveAfterOutage``
    until the idle window (the rules' lookback, else the grace period) has been seen
    again since the evidence came back."""
    if outage is None:
        return None
    since, resumed = outage
    if resumed is None:
        why = (
            f"its evidence is back after a hold since {rfc3339(since)}: a reclaim waits "
            "for one more healthy evaluation"
        )
        return c.hold(why, HoldKind.RESUMING, LadderStep.RECLAIM)
    ladder = c.policy.spec.ladder
    limit = ladder.reprove_after_outage
    if limit <= 0 or resumed - since <= limit:
        return None
    window = max((a.window for a in c.matched), default=0.0) or ladder.grace_period
    until = resumed + window
    if now >= until:
        return None
    why = (
        f"its evidence was missing for {resumed - since:.0f}s (over reproveAfterOutage "
        f"{limit:.0f}s): the idle window is proven again until {rfc3339(until)}"
    )
    return c.hold(why, HoldKind.RESUMING, LadderStep.RECLAIM, until)
