"""Buttons on Slack messages: a click is an intake like the others.

1. **take** (``accept``): parse the ``block_actions`` payload and record the click in the
   cluster (adapters/kube/click_store.py) as pending, under its key (one press). Socket
   Mode acknowledges the envelope only then; the HTTP intake has acknowledged the request
   already and calls this from its worker. A twin (Slack sent the same press again) is
   found there.
2. **gather** (the worker): the episode of the message that was pressed, from our own
   records of that message (a button whose value names another episode is refused),
   as its parent shows it; the namespace's owners, the user's groups among those
   allowed, the kill switch.
3. **plan** (pure, engine/notify/click_plan.py): authorization, staleness, repeats.
4. **act** (click_actions.py) through the ladder's executor or step runner, record it in
   the ledger, mark the click done, and let the notifier update the parent and say it
   in the thread.

Only the leader holds the Socket Mode connection and acts; a click it took but did not
finish (killed) stays pending in the cluster, and the next leader acts on it once: the
write carries the click's key, so an action found applied is not applied again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from guardian.adapters.kube.click_store import DONE
from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.slack.block_actions import parse_click
from guardian.adapters.slack.mrkdwn import escape
from guardian.app.notify.click_actions import ClickActor
from guardian.app.notify.click_wiring import ClickWiring
from guardian.app.notify.service import SlackNotifier
from guardian.app.notify.thread_handover import unpack_finding
from guardian.engine.notify import lifecycle as lc
from guardian.engine.notify.buttons import ButtonRules
from guardian.engine.notify.click_plan import (
    OWNERS_ANNOTATION,
    Access,
    Click,
    ClickFacts,
    ClickPlan,
    allowed_ids,
    plan_click,
)
from guardian.engine.notify.findings import split_mentions
from guardian.model.notifications import Finding
from guardian.model.policies import Annotations
from guardian_common.errors import GuardianError, TransientError

logger = logging.getLogger(__name__)

_SWEEP_EVERY = 2.0  # clicks a standby took (HTTP) or a dead leader left pending
_GIVE_UP_AFTER = 600.0  # a click still failing after 10 minutes is answered and dropped
_CONFLICTS = 3


class SlackPeople(Protocol):
    """The Web API calls a click needs (WebApiTransport)."""

    def post_ephemeral(self, channel: str, user: str, text: str) -> None: ...

    def usergroup_members(self, group: str) -> tuple[str, ...]: ...


class ClickService:
    def __init__(
        self,
        notifier: SlackNotifier,
        wiring: ClickWiring,
        people: SlackPeople,
        access: Callable[[], Access],
        clock: Callable[[], float],
    ) -> None:
        self.notifier = notifier
        self.w = wiring
        self._actor = ClickActor(wiring)
        self.people = people
        self._access = access  # read per click: a config reload applies at once
        self.clock = clock
        self._queue: queue.Queue[Click] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_sweep = float("-inf")
        self._queued: set[str] = set()  # taken here, not acted on yet: not the sweep's
        self.acted = 0

    @property
    def access(self) -> Access:
        return self._access()

    @property
    def rules(self) -> ButtonRules:
        return self.notifier.button_rules()

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
                self._queued.add(click.key)
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
                    self._queued.discard(click.key)
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
        pending = [r for r in self.w.store.pending() if r.click.key not in self._queued]
        for record in pending:
            if self.clock() - record.at > _GIVE_UP_AFTER:
                why = "GPU Guardian could not act on it in time; press the button again"
                self._answer(record.click, ClickPlan(None, f"Nothing changed: {why}."))
                self.w.store.finish(record.click, self.clock(), "given up")
                continue
            logger.info("slack: click %s taken but not finished: acting on it", record.click.key)
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
            self.w.store.forget(click, now)  # nothing changed: a later press is a new click
            return
        try:
            outcome, event = self._actor.act(click, plan.action, plan, f, f.workload, now)
        except (NotLeader, TransientError):
            raise  # stays pending: the sweep (or the next leader) tries again
        except GuardianError as exc:  # a retry cannot help: say so, once
            self._answer(click, ClickPlan(None, f"Nothing changed: {exc}"))
            self.w.store.forget(click, now)
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
        finding, foreign = self._finding(click)
        if foreign:
            logger.warning(
                "slack: click %s by %s refused: its value %r is not the episode of message %s",
                click.action_id,
                click.user,
                click.episode,
                click.message_ts,
            )
            return ClickFacts(None, foreign=True)
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

    def _finding(self, click: Click) -> tuple[Finding | None, bool]:
        """The episode of the message that was pressed, as its parent shows it, and True
        when the button's value names another one. The message is looked up in our own
        records; a parent another leader posted, in the shared state (and adopted)."""
        mine = self.notifier.message_episode(click.channel_id, click.message_ts)
        if mine is not None:
            return (None, True) if mine != click.episode else (self.notifier.finding(mine), False)
        if self.w.journal is None:
            return None, False
        try:
            self.w.journal.refresh()
            records = self.w.journal.episodes()
        except GuardianError as exc:
            logger.warning("slack: shared state unreadable for a click: %s", exc)
            return None, False
        for r in records:
            parent = r.slack
            if parent is None or parent.ts != click.message_ts:
                continue
            if parent.channel_id not in (None, click.channel_id):
                continue
            if parent.alert_episode != click.episode:
                return None, True
            self.notifier.adopt_thread(r.episode, parent, r.alert_labels)
            adopted = self.notifier.finding(click.episode)
            return adopted or unpack_finding(parent.finding, r.alert_labels, click.episode), False
        return None, False

    def _answer(self, click: Click, plan: ClickPlan) -> None:
        if not plan.answer:
            return
        try:  # escaped: it may name a label value or an error's text
            self.people.post_ephemeral(click.channel_id, click.user, escape(plan.answer))
        except GuardianError as exc:  # the user sees nothing happen, and may press again
            logger.warning("slack: could not answer %s: %s", click.user, exc)
