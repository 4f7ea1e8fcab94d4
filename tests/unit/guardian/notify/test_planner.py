"""The notifier's planner: gathered state and changes in, rows and operations out. Pure:
literal state, literal times, no database and no cluster."""

from __future__ import annotations

import dataclasses
from datetime import UTC

from guardian.engine.notify.lifecycle import OpKind
from guardian.engine.notify.planner import (
    PlannerSettings,
    group_keys,
    needs_owner,
    plan_remediation,
    plan_tick,
    plan_transitions,
)
from guardian.engine.notify.routing import MuteWindow, Routes
from guardian.engine.notify.state import NotifyPlan, NotifyState, Skip, ThreadKind, ThreadRow
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.notifications import Phase
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    episode_id,
)
from tests.unit.guardian.notify.samples import (
    ANNOTATIONS,
    CONTEXT,
    LABELS,
    RULES,
    T0,
    WORKLOAD,
    written,
)

SETTINGS = PlannerSettings(
    rules=RULES,
    routes=Routes("#alerts", by_namespace={"team": "#team"}),
    grouping=False,
    repeat_interval=3600.0,
)
GROUPING = dataclasses.replace(SETTINGS, grouping=True, min_alerts=2)


def _firing(pod: str = "p", namespace: str = "ml", active_at: float = T0) -> AlertTransition:
    labels = LabelSet({**LABELS, "pod": pod, "namespace": namespace})
    return AlertTransition(
        TransitionKind.FIRING, AlertState.PENDING, "g", "GpuIdle", labels, ANNOTATIONS,
        0.01, active_at, T0, Evidence(EvaluationHealth.OK, T0, "q"),
    )  # fmt: skip


def _resolved(t: AlertTransition, at: float) -> AlertTransition:
    return dataclasses.replace(t, kind=TransitionKind.RESOLVED, previous=AlertState.FIRING, at=at)


def _ep(t: AlertTransition) -> str:
    return episode_id(t.labels, t.active_at)


def _ops(plan: NotifyPlan) -> list[tuple[str, OpKind, str]]:
    return [(e.channel, e.op.kind, e.op.idem) for e in plan.outbox]


def test_a_new_episode_gets_its_thread_its_row_and_a_parent_post() -> None:
    t = _firing()
    ep = _ep(t)

    plan = plan_transitions(NotifyState(owners={ep: CONTEXT}), [t], T0, SETTINGS)

    assert plan.threads == (ThreadRow(f"episode:{ep}", "#alerts", ThreadKind.EPISODE),)
    [row] = plan.episodes
    assert (row.episode, row.thread, row.announced, row.last_notified_at) == (
        ep,
        f"episode:{ep}",
        True,
        T0,
    )
    assert row.finding.workload == WORKLOAD  # the owner gathered from the cluster
    assert row.finding.mentions == ("U0ALICE", "@here")
    assert _ops(plan) == [("#alerts", OpKind.POST, f"{ep}:alert:firing:post")]
    assert plan.seen == (f"{ep}:alert:firing",)
    assert plan.cursor is None


def test_a_replay_plans_nothing_and_says_why() -> None:
    t = _firing()
    first = plan_transitions(NotifyState(), [t], T0, SETTINGS)

    again = plan_transitions(written(NotifyState(), first), [t], T0 + 60, SETTINGS)

    assert (again.threads, again.episodes, again.seen, again.outbox) == ((), (), (), ())
    assert again.skipped == (Skip(f"{_ep(t)}:alert:firing", "applied before (a replay)"),)


def test_pending_transitions_and_unknown_resolves_plan_nothing() -> None:
    pending = dataclasses.replace(_firing(), kind=TransitionKind.PENDING)
    gone = _resolved(_firing("never-announced"), T0 + 60)

    plan = plan_transitions(NotifyState(), [pending, gone], T0 + 60, SETTINGS)

    assert plan.outbox == ()
    assert plan.episodes == ()
    assert [s.reason for s in plan.skipped] == [
        "nothing new for a reader (a repeat, or never announced)"
    ]


def test_a_resolve_updates_the_parent_and_replies_in_its_thread() -> None:
    t = _firing()
    state = written(NotifyState(), plan_transitions(NotifyState(), [t], T0, SETTINGS))

    plan = plan_transitions(state, [_resolved(t, T0 + 600)], T0 + 600, SETTINGS)

    ep = _ep(t)
    assert plan.threads == ()  # the episode's thread exists
    assert _ops(plan) == [
        ("#alerts", OpKind.UPDATE, f"{ep}:alert:resolved:update"),
        ("#alerts", OpKind.REPLY, f"{ep}:alert:resolved:reply"),
    ]
    [row] = plan.episodes
    assert row.finding.phase is Phase.RESOLVED
    assert row.last_notified_at == T0 + 600


def test_a_muted_change_is_kept_dirty_and_held() -> None:
    t = _firing()
    settings = dataclasses.replace(SETTINGS, mute=(MuteWindow(UTC, start=T0, end=T0 + 3600),))

    plan = plan_transitions(NotifyState(), [t], T0, settings)

    [row] = plan.episodes
    assert (row.dirty, row.announced) == (True, False)
    assert plan.outbox == ()
    assert plan.skipped == (Skip(f"{_ep(t)}:alert:firing", "muted: held until the window ends"),)
    # The window ends: the tick catches up with one parent post.
    after = plan_tick(written(NotifyState(), plan), T0 + 3600, settings)
    assert [(kind, idem.split(":", 1)[1]) for _, kind, idem in _ops(after)] == [
        (OpKind.POST, f"unmute:{T0:.3f}:post")
    ]
    [row] = after.episodes
    assert (row.dirty, row.announced) == (False, True)


def test_new_alerts_of_one_rule_and_namespace_share_a_summary_parent() -> None:
    a, b, solo = _firing("a"), _firing("b"), _firing("c", namespace="team")
    batch = [a, b, solo]
    [key] = group_keys(batch, set(), GROUPING)

    plan = plan_transitions(NotifyState(), batch, T0, GROUPING)

    assert key == f"group:GpuIdle:ml:{int(T0)}"
    assert [(t.key, t.kind) for t in plan.threads] == [
        (key, ThreadKind.GROUP),
        (f"episode:{_ep(solo)}", ThreadKind.EPISODE),
    ]
    assert _ops(plan) == [
        ("#alerts", OpKind.POST, f"{key}:post"),
        ("#alerts", OpKind.REPLY, f"{_ep(a)}:alert:firing:detail"),
        ("#alerts", OpKind.REPLY, f"{_ep(b)}:alert:firing:detail"),
        ("#team", OpKind.POST, f"{_ep(solo)}:alert:firing:post"),
    ]
    summary = plan.outbox[0].op.summary
    assert summary is not None
    assert [f.pod for f in summary.findings] == ["a", "b"]
    assert {r.thread for r in plan.episodes if r.episode != _ep(solo)} == {key}


def test_owners_are_needed_for_new_firing_episodes_only() -> None:
    known, new = _firing("known"), _firing("new")
    resolved = _resolved(_firing("other"), T0 + 60)

    assert needs_owner([known, new, resolved], {_ep(known)}) == [new]


def _event(
    ladder: str, step: LadderStep, at: float, labels: LabelSet, seq: int | None = None
) -> RemediationEvent:
    return RemediationEvent(
        ladder, WORKLOAD, step, StepOutcome.APPLIED, at, "p", "idle", labels, seq=seq
    )


def test_ladders_claim_the_newest_unclaimed_alert_episode_once() -> None:
    old, new = _firing("p", active_at=T0 - 600), _firing("p", active_at=T0)
    state = written(NotifyState(), plan_transitions(NotifyState(), [old, new], T0, SETTINGS))
    state = dataclasses.replace(state, unclaimed=frozenset({_ep(old), _ep(new)}))
    pod_only = LabelSet({"alertname": "GpuIdle", "namespace": "ml", "pod": "p"})
    events = [
        _event("wl-1", LadderStep.GRACE, T0 + 60, new.labels, seq=7),
        _event("wl-2", LadderStep.GRACE, T0 + 60, pod_only, seq=8),  # same pod: the other one
        _event("wl-1", LadderStep.RECLAIM, T0 + 120, LabelSet(), seq=9),  # follows its claim
        _event("wl-3", LadderStep.GRACE, T0 + 60, pod_only, seq=10),  # nothing left to claim
    ]

    plan = plan_remediation(state, events, T0 + 120, SETTINGS, cursor=6)

    assert plan.aliases == (("wl-1", _ep(new)), ("wl-2", _ep(old)))
    phases = {r.episode: r.finding.phase for r in plan.episodes}
    assert phases == {
        _ep(new): Phase.RECLAIMED,
        _ep(old): Phase.GRACE,
        "wl-3": Phase.GRACE,  # an episode (and a thread) of its own
    }
    assert [t.key for t in plan.threads] == ["episode:wl-3"]
    assert plan.cursor == 10
    # Read again from the same position: every event was applied, the cursor stays.
    again = plan_remediation(written(state, plan), events, T0 + 180, SETTINGS, cursor=10)
    assert (again.outbox, again.cursor) == ((), None)
    assert {s.reason for s in again.skipped} == {"applied before (a replay)"}


def test_a_group_thread_gets_one_reminder_per_interval() -> None:
    batch = [_firing("a"), _firing("b")]
    state = written(NotifyState(), plan_transitions(NotifyState(), batch, T0, GROUPING))

    early = plan_tick(state, T0 + 1800, GROUPING)
    due = plan_tick(state, T0 + 3600, GROUPING)

    assert early.outbox == ()
    assert [kind for _, kind, _ in _ops(due)] == [OpKind.UPDATE, OpKind.REPLY]
    assert [r.reminders for r in due.episodes] == [1, 1]
    second = sorted(_ep(t) for t in batch)[1]
    assert due.skipped == (Skip(second, "one reminder per group thread"),)
