"""What a click does to the cluster: the ladder's executor and step runner, nothing else.

*Keep* and *Exempt* set annotations in one conditional write carrying the click's key
(``gpu-guardian.io/slack-click``), with an Event; a write found already there (a leader
killed after acting) is not repeated. *Restore* is ``guardian restore``'s path; *Reclaim
now* the policy's reclaim step, claimed in the shared state like the ladder's.
"""

from __future__ import annotations

import logging

from guardian.adapters.kube.click_store import data_key
from guardian.adapters.kube.executor import Hold
from guardian.adapters.kube.rest import Conflict
from guardian.app.notify.click_wiring import ClickWiring
from guardian.app.remediation.restore import restore_workload
from guardian.engine.notify.buttons import KEEP_FOR, ButtonAction
from guardian.engine.notify.click_plan import CLICK_ANNOTATION, Click, ClickOutcome, ClickPlan
from guardian.engine.remediation.evidence import coverage
from guardian.engine.remediation.matching import policy_matches
from guardian.model.notifications import Finding
from guardian.model.policies import Annotations, HpaPolicy, Mode
from guardian.model.reclaim import PlannedAction, WorkloadState
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.times import rfc3339
from guardian_common.errors import PermanentError

logger = logging.getLogger(__name__)

_CONFLICTS = 3


class ClickActor:
    def __init__(self, wiring: ClickWiring) -> None:
        self.w = wiring

    def act(
        self,
        click: Click,
        action: ButtonAction,
        plan: ClickPlan,
        f: Finding,
        ref: WorkloadRef,
        now: float,
    ) -> tuple[ClickOutcome, RemediationEvent | None]:
        base = ClickOutcome(f.episode, click.key, action, click.user, now, plan.keep_until)
        if action is ButtonAction.RESTORE:
            who = f"Slack user {click.user}"
            try:
                done = restore_workload(ref, self.w.reader, self.w.steps, now, who=who)
            except PermanentError:
                ws = self.w.reader.workload(ref)
                if Annotations.RESTORED_AT not in ws.annotations:
                    raise
                done = "it was restored already"
            return _with(base, done), None  # the step runner recorded the ledger event
        if action is ButtonAction.RECLAIM_NOW:
            return _with(base, self._reclaim_now(click, f, ref, now)), None
        annotations = {CLICK_ANNOTATION: data_key(click)}
        if action in KEEP_FOR and plan.keep_until is not None:
            annotations[Annotations.SNOOZE_UNTIL] = rfc3339(plan.keep_until)
            reason = "GPUIdleKept"
        else:
            annotations[Annotations.EXCLUDE] = "true"
            reason = "GPUIdleExempted"
        ladder = self._ladder_episode(f)
        done = self._hold(ref, Hold(annotations, reason, plan.reason, ladder), now)
        event = RemediationEvent(
            ladder,
            ref,
            LadderStep.GRACE,
            StepOutcome.REFUSED,
            now,
            f.policy or "",
            plan.reason,
            f.labels,
        )
        return _with(base, done), event

    def _hold(self, ref: WorkloadRef, hold: Hold, now: float) -> str:
        for _ in range(_CONFLICTS):
            ws = self.w.reader.workload(ref)
            if ws.annotations.get(CLICK_ANNOTATION) == hold.annotations[CLICK_ANNOTATION]:
                return "found applied (a leader before this one did it)"
            try:
                return self.w.executor.hold(ws, hold, now).message
            except Conflict:
                logger.info("slack: %s changed under a click; reading it again", ref)
        raise PermanentError(f"{ref} kept changing; press the button again")

    def _reclaim_now(self, click: Click, f: Finding, ref: WorkloadRef, now: float) -> str:
        """The ladder's reclaim step, now: the policy's own switches, the same runner."""
        policy = next((p for p in self.w.policies() if p.name == f.policy), None)
        if policy is None or policy.spec.mode is not Mode.ENFORCE:
            raise PermanentError(f"policy {f.policy or '(none)'} does not enforce here")
        action = PlannedAction(
            ref,
            LadderStep.RECLAIM,
            policy.name,
            self._ladder_episode(f),
            f"reclaim now, requested by Slack user {click.user}",
            self.w.dry_run(),
            f.labels,
            delete_pod=policy.spec.allow_pod_deletion,
            hpa_record=policy.spec.hpa is HpaPolicy.RECORD,
        )

        def check() -> tuple[PlannedAction, WorkloadState] | None:
            ws = self.w.reader.with_members(self.w.reader.workload(ref))
            if Annotations.RECLAIMED_AT in ws.annotations:
                return None  # done already (a leader before this one, or the ladder)
            if ws.hpa is not None and not action.hpa_record:
                raise PermanentError(f"an HPA scales {ref} and policy {policy.name} refuses")
            namespace = self.w.reader.namespace(ref.namespace)
            mine = [a for a in self.w.alerts() if policy_matches(policy, a, ws, namespace)]
            covered = coverage(ws, mine, now)  # the ladder's rule: all of it idle, now
            if not covered.whole:
                raise PermanentError(f"{ref}: {covered.reason()}")
            return action, ws

        if self.w.journal is not None:
            self.w.journal.claim(action, f.active_at, now)
        report = self.w.steps.run(check, now)
        if report.result is None and report.error is None:
            return "it was reclaimed already"
        return report.done().message

    def _ladder_episode(self, f: Finding) -> str:
        if self.w.journal is not None:
            for r in self.w.journal.episodes():
                if r.slack is not None and r.slack.alert_episode == f.episode:
                    return r.episode
        return f.episode


def _with(base: ClickOutcome, done: str) -> ClickOutcome:
    return ClickOutcome(
        base.episode, base.key, base.action, base.user, base.at, base.keep_until, done
    )
