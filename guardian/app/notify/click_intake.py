"""Buttons on Slack messages: a click is an intake like the others.

1. **take** (the listener's thread, within Slack's 3 s): parse the ``block_actions``
   payload and record the click in the cluster (adapters/kube/click_store.py) as pending;
   only then is it acknowledged. A twin (retried envelope, double click) is found there.
2. **gather** (the worker): the episode as its parent shows it, the namespace's owners,
   the user's groups among those allowed, the kill switch.
3. **plan** (pure, engine/notify/clicks.py): authorization, staleness, repeats.
4. **act** through the ladder's executor (annotations in one conditional write with an
   Event) or its step runner (restore), record it in the ledger, mark the click done,
   and let the notifier update the parent and say it in the thread.

Only the leader holds the Socket Mode connection and acts; a click it took but did not
finish (killed) stays pending in the cluster, and the next leader acts on it once: the
write carries the click's key, so an action found applied is not applied again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from guardian.adapters.kube.click_store import DONE, ClickStore, data_key
from guardian.adapters.kube.executor import Executor, Hold
from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import Conflict
from guardian.adapters.ledger import Ledger
from guardian.app.notify.service import SlackNotifier
from guardian.app.notify.thread_handover import unpack_finding
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.restore import restore_workload
from guardian.app.remediation.step_runner import StepRunner
from guardian.engine.notify import lifecycle as lc
from guardian.engine.notify.buttons import KEEP_FOR, ButtonAction, ButtonRules
from guardian.engine.notify.click_plan import (
    CLICK_ANNOTATION,
    OWNERS_ANNOTATION,
    Access,
    Click,
    ClickFacts,
    ClickOutcome,
    ClickPlan,
    allowed_ids,
    plan_click,
)
from guardian.engine.notify.findings import split_mentions
from guardian.model.notifications import Finding
from guardian.model.policies import Annotations, HpaPolicy, Mode, ReclaimPolicy
from guardian.model.reclaim import PlannedAction, WorkloadState
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError, PermanentError

logger = logging.getLogger(__name__)

_SWEEP_EVERY = 2.0  # clicks a standby took (HTTP) or a dead leader left pending
_CONFLICTS = 3


class SlackPeople(Protocol):
    """The Web API calls a click needs (WebApiTransport)."""

    def post_ephemeral(self, channel: str, user: str, text: str) -> None: ...

    def usergroup_members(self, group: str) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ClickWiring:
    """What a click acts through: the ladder's own parts."""

    store: ClickStore
    reader: KubeReader
    executor: Executor
    steps: StepRunner
    ledger: Ledger
    controller_namespace: str
    kill_switch: Callable[[], bool]  # the settings' switch
    is_leader: Callable[[], bool]
    journal: EpisodeJournal | None = None
    policies: Callable[[], Sequence[ReclaimPolicy]] = tuple
    dry_run: Callable[[], bool] = lambda: False


def parse_click(payload: dict[str, Any]) -> Click | None:
    """The click in a ``block_actions`` payload (None: not a button of a message)."""
    actions = payload.get("actions") or []
    container = payload.get("container") or {}
    if not actions or container.get("type", "message") != "message":
        return None
    action = actions[0]
    channel = container.get("channel_id") or (payload.get("channel") or {}).get("id")
    ts = container.get("message_ts") or (payload.get("message") or {}).get("ts")
    user = (payload.get("user") or {}).get("id")
    if not (channel and ts and user and action.get("action_id")):
        return None
    return Click(
        str(action["action_id"]),
        str(action.get("value") or ""),
        str(user),
        str(channel),
        str(ts),
        float(action.get("action_ts") or 0.0),
    )


class ClickService:
    def __init__(
        self,
        notifier: SlackNotifier,
        wiring: ClickWiring,
        people: SlackPeople,
        access: Access,
        clock: Callable[[], float],
    ) -> None:
        self.notifier = notifier
        self.w = wiring
        self.people = people
        self.access = access
        self.clock = clock
        self._queue: queue.Queue[Click] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_sweep = float("-inf")
        self.acted = 0

    @property
    def rules(self) -> ButtonRules:
        return self.notifier.buttons

    # -------------------------------------------------------------- take
    def accept(self, payload: dict[str, Any]) -> bool:
        """Record the click where every replica sees it; True: acknowledge it now. On a
        standby (HTTP mode: any replica may receive it) the leader's sweep acts on it."""
        click = parse_click(payload)
        if click is None:
            return True  # nothing of ours: ack it so Slack stops sending it
        twin = self.w.store.record(click, self.clock())  # a standby too: the leader sweeps
        if twin is None:
            if self.w.is_leader():
                self._queue.put(click)
        elif twin.state == DONE:
            self._answer(
                click,
                plan_click(click, ClickFacts(None, done_before=True), self.access, self.rules),
            )
        else:
            logger.info("slack: click %s is already being acted on", click.key)
        return True

    # -------------------------------------------------------------- worker
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="slack-clicks", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                click = self._queue.get(timeout=0.2)
            except queue.Empty:
                click = None
            try:
                if click is not None:
                    self.process(click)
                if self.clock() - self._last_sweep >= _SWEEP_EVERY:
                    self.sweep()
            except NotLeader as exc:  # the fence: this replica stops acting
                logger.error("slack: click not acted on: %s", exc)
            except Exception:  # the loop edge: the click stays pending for the sweep
                logger.exception("slack: click failed; it stays pending")

    def sweep(self) -> int:
        """Act on clicks recorded but never finished (a leader died after the ack)."""
        self._last_sweep = self.clock()
        if not self.w.is_leader():
            return 0
        pending = self.w.store.pending()
        for record in pending:
            logger.warning(
                "slack: click %s was taken but never finished: acting on it", record.click.key
            )
            self.process(record.click)
        return len(pending)

    def drain(self) -> int:
        """Act on everything taken so far (tests and the demo, without the worker)."""
        done = 0
        while True:
            try:
                click = self._queue.get_nowait()
            except queue.Empty:
                return done
            self.process(click)
            done += 1

    # -------------------------------------------------------------- one click
    def process(self, click: Click) -> None:
        stored = self.w.store.get(click)
        if stored is not None and stored.state == DONE:
            return  # the sweep got to it first
        facts = self._gather(click)
        plan = plan_click(click, facts, self.access, self.rules)
        now = self.clock()
        f = facts.finding
        if plan.action is None or f is None or f.workload is None:
            logger.info(
                "slack: click %s by %s not acted on: %s", click.action_id, click.user, plan.reason
            )
            self._answer(click, plan)
            self.w.store.finish(click, now, f"refused: {plan.reason}")
            return
        try:
            outcome, event = self._act(click, plan.action, plan, f, f.workload, now)
        except PermanentError as exc:
            self._answer(click, ClickPlan(None, f"Nothing changed: {exc}"))
            self.w.store.finish(click, now, f"failed: {exc}")
            return
        self.w.store.finish(click, now, outcome.done)
        self.acted += 1

        def record() -> tuple[str, ...]:
            if event is None:
                return ()
            stored = self.w.ledger.record(event)
            return (lc.event_idem(stored or event),)

        self.notifier.on_click(outcome, record)

    def _gather(self, click: Click) -> ClickFacts:
        finding = self._finding(click)
        if finding is None or finding.workload is None or finding.namespace is None:
            return ClickFacts(finding)
        switch = self.w.kill_switch()
        ns = self.w.reader.namespace(self.w.controller_namespace)
        if ns is not None and ns.annotations.get(Annotations.KILL_SWITCH, "") == "true":
            switch = True
        target = self.w.reader.namespace(finding.namespace)
        owners = split_mentions(target.annotations.get(OWNERS_ANNOTATION, "")) if target else ()
        ids = allowed_ids(finding, self.access, owners)
        groups = frozenset(g for g in ids if g.startswith("S") and click.user in self._members(g))
        return ClickFacts(finding, owners, groups, switch)

    def _members(self, group: str) -> tuple[str, ...]:
        try:
            return self.people.usergroup_members(group)
        except GuardianError as exc:  # per group: its members cannot be told apart now
            logger.warning("slack: members of %s unknown: %s", group, exc)
            return ()

    def _finding(self, click: Click) -> Finding | None:
        """The episode as its parent shows it; a parent another leader posted is adopted."""
        found = self.notifier.finding(click.episode)
        if found is not None or self.w.journal is None:
            return found
        try:
            self.w.journal.refresh()
            records = self.w.journal.episodes()
        except GuardianError as exc:
            logger.warning("slack: shared state unreadable for a click: %s", exc)
            return None
        for r in records:
            if r.slack is not None and r.slack.alert_episode == click.episode:
                self.notifier.adopt_thread(r.episode, r.slack, r.alert_labels)
                adopted = self.notifier.finding(click.episode)
                return adopted or unpack_finding(r.slack.finding, r.alert_labels, click.episode)
        return None

    def _answer(self, click: Click, plan: ClickPlan) -> None:
        if not plan.answer:
            return
        try:
            self.people.post_ephemeral(click.channel_id, click.user, plan.answer)
        except GuardianError as exc:  # the user sees nothing happen, and may press again
            logger.warning("slack: could not answer %s: %s", click.user, exc)

    # -------------------------------------------------------------- act
    def _act(
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
            ws = self.w.reader.workload(ref)
            if Annotations.RECLAIMED_AT in ws.annotations:
                return None  # done already (a leader before this one, or the ladder)
            if ws.hpa is not None and not action.hpa_record:
                raise PermanentError(f"an HPA scales {ref} and policy {policy.name} refuses")
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
