"""Decide what a button click does: authorization, staleness, repeats. Pure.

A click is an intake like the others: the service gathers the facts (the episode of the
message that was pressed, as the notifier's own records of that message have it, and
whether the button's value agrees; the namespace's owners, the user's groups, the kill
switch, whether this press was acted on before), this module plans, and the service
acts through the ladder's executor. Every refusal comes with the answer the user sees
(ephemeral).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from guardian.engine.notify.buttons import KEEP_FOR, LABELS, ButtonAction, ButtonRules, offered
from guardian.model.notifications import Finding, HistoryEntry
from guardian.model.times import rfc3339

OWNERS_ANNOTATION = "gpu-guardian.io/owners"  # on a namespace: who may press its buttons
CLICK_ANNOTATION = "gpu-guardian.io/slack-click"  # the last click applied, by its key


@dataclass(frozen=True)
class Click:
    """One press of one button, as Slack reported it."""

    action_id: str
    episode: str  # the button's value: the episode it was rendered for (checked)
    user: str
    channel_id: str
    message_ts: str
    action_ts: float  # when it was pressed (Slack's clock): one press

    @property
    def key(self) -> str:
        """Idempotency, per press: Slack's retries of one delivery carry the same press
        (its ``action_ts``); pressing the button again later is a new press."""
        return f"{self.action_id}:{self.message_ts}:{self.user}:{self.action_ts:.6f}"


@dataclass(frozen=True)
class Access:
    """Who may press buttons: Slack user (``U…``/``W…``) or user-group (``S…``) IDs."""

    admins: tuple[str, ...] = ()  # everywhere
    by_namespace: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_gpu_group: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    owners_annotation: bool = True  # also the namespace's ``gpu-guardian.io/owners``


@dataclass(frozen=True)
class ClickFacts:
    finding: Finding | None  # None: the message is not one of ours (any more)
    owners: tuple[str, ...] = ()  # the namespace annotation's IDs
    member_of: frozenset[str] = frozenset()  # the user's groups among the allowed IDs
    kill_switch: bool = False  # settings or the controller namespace's annotation
    done_before: bool = False
    # The button's value names another episode than the message it is on (by our own
    # records of that message): a forged or mixed-up click, never acted on.
    foreign: bool = False


@dataclass(frozen=True)
class ClickPlan:
    action: ButtonAction | None  # None: change nothing
    answer: str | None = None  # the ephemeral answer (refusals, repeats, stale clicks)
    keep_until: float | None = None
    reason: str = ""


def allowed_ids(finding: Finding, access: Access, owners: tuple[str, ...]) -> tuple[str, ...]:
    """Every ID that may act on ``finding``'s workload, in order, without repeats."""
    ids: list[str] = list(access.admins)
    if finding.namespace:
        ids += access.by_namespace.get(finding.namespace, ())
    if finding.gpu_group:
        ids += access.by_gpu_group.get(finding.gpu_group, ())
    if access.owners_annotation:
        ids += owners
    return tuple(dict.fromkeys(ids))


def plan_click(click: Click, facts: ClickFacts, access: Access, rules: ButtonRules) -> ClickPlan:
    try:
        action = ButtonAction(click.action_id)
    except ValueError:
        return ClickPlan(None, "That button is not one of GPU Guardian's.", reason="unknown action")
    label = LABELS[action]
    if facts.foreign:
        why = "that button does not belong to the message it was pressed on"
        return ClickPlan(None, f"Nothing changed: {why}.", reason="value disagrees with message")
    if facts.done_before:
        return ClickPlan(None, f"*{label}* was already done for this message.", reason="repeat")
    f = facts.finding
    if f is None or f.workload is None:
        why = "this message is not an episode GPU Guardian is following"
        return ClickPlan(None, f"Nothing changed: {why}.", reason="unknown episode")
    if facts.kill_switch or rules.kill_switch:
        why = "the kill switch is on, so every button is disabled"
        return ClickPlan(None, f"Nothing changed: {why}.", reason="kill switch")
    if action not in offered(f, rules):
        now_phase = f.phase.value + (" and resolved" if f.resolved_at is not None else "")
        text = (
            f"Nothing changed: the episode has moved on (it is {now_phase}); "
            f"*{label}* no longer applies."
        )
        return ClickPlan(None, text, reason=f"stale: {now_phase}")
    ids = allowed_ids(f, access, facts.owners)
    if click.user not in ids and not (facts.member_of & set(ids)):
        where = f"namespace `{f.namespace}`" + (
            f" (GPU group `{f.gpu_group}`)" if f.gpu_group else ""
        )
        text = (
            f"You are not allowed to press *{label}* for workloads in {where}; nothing changed. "
            "Ask an owner, or the GPU Guardian admins to add you."
        )
        return ClickPlan(None, text, reason="not authorized")
    until = click.action_ts + KEEP_FOR[action] if action in KEEP_FOR else None
    reason = f"{label} by Slack user {click.user}"
    if until is not None:
        reason += f" until {rfc3339(until)}"
    return ClickPlan(action, keep_until=until, reason=reason)


@dataclass(frozen=True)
class ClickOutcome:
    """What a click did, for the episode's parent and thread."""

    episode: str
    key: str  # the click's idempotency key
    action: ButtonAction
    user: str
    at: float
    keep_until: float | None = None
    done: str = ""  # the executor's words (e.g. "scaled back to 3")
    ledger_keys: tuple[str, ...] = ()  # the ledger events it wrote: not echoed twice


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def apply_click(before: Finding, o: ClickOutcome) -> tuple[Finding, HistoryEntry]:
    """The finding after the click, and the thread's line ("<@U…> kept it until …")."""
    changes: dict[str, object] = {"updated_at": o.at}
    if o.action in KEEP_FOR and o.keep_until is not None:
        changes.update(kept_until=o.keep_until, kept_by=o.user)
        text = f"kept it until {_utc(o.keep_until)}; the ladder waits until then."
    elif o.action is ButtonAction.EXEMPT:
        changes["exempted_by"] = o.user
        text = "exempted it: GPU Guardian leaves this workload alone."
    elif o.action is ButtonAction.RESTORE:
        text = f"restored it ({o.done})." if o.done else "restored it."
    else:
        text = f"reclaimed it now ({o.done})." if o.done else "reclaimed it now."
    after = before.with_changes(**changes)
    return after, HistoryEntry(o.at, after.phase, text, actor=o.user)
