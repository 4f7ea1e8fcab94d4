"""Plan the notifier's writes: gathered state and changes in, rows and outbox operations out.

Three intakes, each ``gather -> plan -> one write`` in the service:

- ``plan_transitions``: one evaluation cycle's alert transitions (groups many new
  alerts of one rule and namespace under one summary parent);
- ``plan_remediation``: ladder events, each matched to its alert's episode;
- ``plan_tick``: reminders after ``repeat_interval``, and catching up after a mute window.

Pure: the state comes from ``NotifyState`` (read before the transaction, with the
owners from the cluster), time from ``now``. Every change is remembered by its key, so
a replay plans nothing; what is left out is listed in ``NotifyPlan.skipped`` with why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from guardian.engine.notify import lifecycle as lc
from guardian.engine.notify.click_plan import ClickOutcome, apply_click
from guardian.engine.notify.findings import (
    FindingRules,
    apply_remediation,
    apply_transition,
    finding_for_event,
    with_cost,
)
from guardian.engine.notify.picture_plan import picture_ops
from guardian.engine.notify.routing import MuteWindow, Routes, muted
from guardian.engine.notify.state import (
    Draft,
    EpisodeRow,
    NotifyPlan,
    NotifyState,
    ThreadKind,
    ThreadRow,
)
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.evidence_picture import PictureRules
from guardian.model.notifications import Finding, GroupSummary, HistoryEntry
from guardian.model.remediation_events import RemediationEvent, episode_id
from guardian_common.words import plural


@dataclass(frozen=True)
class PlannerSettings:
    rules: FindingRules
    routes: Routes
    mute: tuple[MuteWindow, ...] = ()
    grouping: bool = True
    min_alerts: int = 5
    repeat_interval: float = 14400.0
    webhook: bool = False  # nothing can be updated: every change is a new post
    pictures: PictureRules | None = None  # the evidence as a picture in the thread; None: off


@dataclass(frozen=True)
class _Change:
    """One change of one episode: the row before (None: new), the finding after."""

    row: EpisodeRow | None
    after: Finding
    entry: HistoryEntry
    idem: str
    group: str | None = None


# ------------------------------------------------------------------ what to read
def intake_batch(transitions: Iterable[AlertTransition]) -> list[AlertTransition]:
    """The transitions a reader cares about (pending ones are not)."""
    return [t for t in transitions if t.kind is not TransitionKind.PENDING]


def group_keys(
    batch: Sequence[AlertTransition], known: set[str], settings: PlannerSettings
) -> list[str]:
    """The group threads this batch may open (their rows must be gathered)."""
    if not settings.grouping:
        return []
    return [
        lc.group_key(alertname, namespace, max(t.at for t in members))
        for (alertname, namespace), members in lc.groups_in_cycle(
            batch, known, settings.min_alerts
        ).items()
    ]


def needs_owner(batch: Sequence[AlertTransition], known: set[str]) -> list[AlertTransition]:
    """New episodes: only their first message shows the owner and mentions."""
    return [
        t
        for t in batch
        if t.kind is TransitionKind.FIRING and episode_id(t.labels, t.active_at) not in known
    ]


# ------------------------------------------------------------------ transitions
def plan_transitions(
    state: NotifyState,
    transitions: Iterable[AlertTransition],
    now: float,
    settings: PlannerSettings,
) -> NotifyPlan:
    batch = intake_batch(transitions)
    draft = Draft(state)
    group_of = _form_groups(draft, batch, now, settings) if settings.grouping else {}
    for t in batch:
        idem = lc.transition_idem(t)
        if draft.mark_seen(idem):
            draft.skip(idem, "applied before (a replay)")
            continue
        ep = episode_id(t.labels, t.active_at)
        row = draft.episode(ep)
        changed = apply_transition(
            row.finding if row else None, t, settings.rules, draft.owners.get(ep)
        )
        if changed is None:
            draft.skip(idem, "nothing new for a reader (a repeat, or never announced)")
            continue
        _apply(draft, _Change(row, *changed, idem, group_of.get(ep)), now, settings)
    return draft.plan()


def _form_groups(
    draft: Draft, batch: list[AlertTransition], now: float, settings: PlannerSettings
) -> dict[str, str]:
    known = {
        ep for t in batch if draft.episode(ep := episode_id(t.labels, t.active_at)) is not None
    }
    group_of: dict[str, str] = {}
    for (alertname, namespace), members in lc.groups_in_cycle(
        batch, known, settings.min_alerts
    ).items():
        key = lc.group_key(alertname, namespace, max(t.at for t in members))
        findings = []
        for t in members:
            owner = draft.owners.get(episode_id(t.labels, t.active_at))
            changed = apply_transition(None, t, settings.rules, owner)
            if changed is not None and not muted(settings.mute, changed[0], now):
                findings.append(changed[0])
        if len(findings) < settings.min_alerts:
            draft.skip(key, f"only {plural(len(findings), 'unmuted alert')}: not grouped")
            continue
        thread = draft.ensure_thread(
            key, settings.routes.channel_for(findings[0]), ThreadKind.GROUP
        )
        summary = lc.summarise(key, alertname, namespace, findings, now)
        draft.enqueue(thread, lc.plan_group(summary, webhook=settings.webhook))
        group_of.update((f.episode, key) for f in findings)
    return group_of


def _apply(draft: Draft, change: _Change, now: float, settings: PlannerSettings) -> None:
    row, after = change.row, change.after
    thread_key = row.thread if row else (change.group or f"episode:{after.episode}")
    kind = ThreadKind.GROUP if change.group else ThreadKind.EPISODE
    thread = draft.ensure_thread(thread_key, settings.routes.channel_for(after), kind)
    announced = row.announced if row else False
    new_row = EpisodeRow(
        after.episode,
        thread_key,
        after,
        announced,
        dirty=False,
        last_notified_at=row.last_notified_at if row else now,
        reminders=row.reminders if row else 0,
    )
    if muted(settings.mute, after, now):
        draft.save(replace(new_row, dirty=True))
        draft.skip(change.idem, "muted: held until the window ends")
        return
    draft.save(new_row)  # a group summary reads its members
    episode_change = lc.EpisodeChange(after, change.entry, change.idem)
    ops = lc.plan_change(
        episode_change,
        thread=thread_key,
        announced=announced,
        summary=_summary(draft, thread, now),
        webhook=settings.webhook,
    )
    if ops or (thread.kind is ThreadKind.GROUP and not announced):  # the summary announced it
        before = row.finding.phase if row else None
        pictures = picture_ops(episode_change, ops, before, _pictures(settings))
        draft.enqueue(thread, [*ops, *pictures])
        draft.save(replace(new_row, announced=True, last_notified_at=now))
    else:
        draft.skip(change.idem, "never announced and already over: nobody is told")


def _pictures(settings: PlannerSettings) -> PictureRules | None:
    return None if settings.webhook else settings.pictures  # a webhook has no thread


def _summary(draft: Draft, thread: ThreadRow, now: float) -> GroupSummary | None:
    if thread.kind is not ThreadKind.GROUP:
        return None
    members = draft.members(thread.key)
    first = members[0]
    return lc.summarise(thread.key, first.alertname, first.namespace or "", members, now)


# ------------------------------------------------------------------ remediation
def plan_remediation(
    state: NotifyState,
    events: Sequence[RemediationEvent],
    now: float,
    settings: PlannerSettings,
    *,
    cursor: int = 0,
) -> NotifyPlan:
    """Ladder events, in order. ``cursor``: the feed position they were read from; the
    plan moves it past the last event with a sequence number."""
    draft = Draft(state)
    for e in events:
        idem = lc.event_idem(e)
        if draft.mark_seen(idem):
            draft.skip(idem, "applied before (a replay)")
            continue
        row = draft.episode(_alert_episode(draft, e))
        before = row.finding if row else finding_for_event(e, settings.rules)
        changed = apply_remediation(before, e, settings.rules)
        if changed is not None:
            _apply(draft, _Change(row, *changed, idem), now, settings)
    last = max((e.seq for e in events if e.seq is not None), default=None)
    return draft.plan(cursor=last if last is not None and last > cursor else None)


def _alert_episode(draft: Draft, e: RemediationEvent) -> str:
    """The ledger's episodes are per workload, the engine's per alert: find the alert
    episode this ladder belongs to, once, and remember it."""
    known = draft.alias(e.episode)
    if known is not None:
        return known
    if draft.episode(e.episode) is not None:
        return e.episode
    match = draft.match_alert(e.alert_labels) if e.alert_labels else None
    if match is None:
        return e.episode  # an episode of its own (the notifier never saw the alert)
    draft.claim(e.episode, match)
    return match


# ------------------------------------------------------------------ clicks
def plan_click(
    state: NotifyState, outcome: ClickOutcome, now: float, settings: PlannerSettings
) -> NotifyPlan:
    """A button's effect: the parent shows it, the thread says who did what. The ledger
    events the click wrote are marked seen, so the thread does not tell it twice."""
    draft = Draft(state)
    idem = f"click:{outcome.key}"
    for key in outcome.ledger_keys:
        draft.mark_seen(key)
    if draft.mark_seen(idem):
        draft.skip(idem, "applied before (a replay)")
        return draft.plan()
    row = draft.episode(outcome.episode)
    if row is None:
        draft.skip(idem, "no such episode here: nothing to update")
        return draft.plan()
    after, entry = apply_click(row.finding, outcome)
    _apply(draft, _Change(row, after, entry, idem), now, settings)
    return draft.plan()


# ------------------------------------------------------------------ reminders, mutes
def plan_tick(state: NotifyState, now: float, settings: PlannerSettings) -> NotifyPlan:
    """``state`` holds every open or dirty episode (and its group's members)."""
    draft = Draft(state)
    reminded: set[str] = set()
    due = sorted(
        (r for r in state.episodes.values() if r.finding.open or r.dirty), key=lambda r: r.episode
    )
    for row in due:
        _tick_one(draft, row, now, settings, reminded)
    return draft.plan()


def _tick_one(
    draft: Draft, row: EpisodeRow, now: float, settings: PlannerSettings, reminded: set[str]
) -> None:
    finding = with_cost(row.finding, now, settings.rules.prices)
    if muted(settings.mute, finding, now):
        return
    thread = draft.thread(row.thread)
    if thread is None:  # created with the episode: only a damaged database lacks it
        draft.skip(row.episode, f"its thread {row.thread} is missing")
        return
    if row.dirty:
        _catch_up(draft, row, finding, thread, now, settings)
        return
    if not row.announced or not lc.reminder_due(
        finding, row.last_notified_at, now, settings.repeat_interval
    ):
        return
    number = row.reminders + 1
    if thread.kind is not ThreadKind.GROUP or thread.key not in reminded:
        ops = lc.plan_reminder(
            thread=row.thread,
            finding=finding.with_changes(updated_at=now),
            number=number,
            summary=_summary(draft, thread, now),
            webhook=settings.webhook,
        )
        draft.enqueue(thread, ops)
        reminded.add(thread.key)
    else:
        draft.skip(row.episode, "one reminder per group thread")
    draft.save(replace(row, finding=finding, last_notified_at=now, reminders=number))


def _catch_up(
    draft: Draft,
    row: EpisodeRow,
    finding: Finding,
    thread: ThreadRow,
    now: float,
    settings: PlannerSettings,
) -> None:
    """A mute window ended: send the episode's state, unless it came and went unseen."""
    clean = replace(row, finding=finding, dirty=False)
    draft.save(clean)
    if not row.announced and not finding.open:
        draft.skip(row.episode, "came and went while muted")
        return
    entry = HistoryEntry(now, finding.phase, "Update after a mute window.")
    episode_change = lc.EpisodeChange(finding, entry, lc.unmute_idem(finding))
    ops = lc.plan_change(
        episode_change,
        thread=row.thread,
        announced=row.announced,
        summary=_summary(draft, thread, now),
        webhook=settings.webhook,
    )
    pictures = picture_ops(episode_change, ops, finding.phase, _pictures(settings))
    draft.enqueue(thread, [*ops, *pictures])
    draft.save(replace(clean, announced=True, last_notified_at=now))
