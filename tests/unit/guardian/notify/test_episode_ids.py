"""One episode id for people: Slack shows the ladder's (workload) episode once a ladder
step belongs to the alert, the alert's own (said to be the alert's) before; the notifier
keeps keying its rows by the alert episode."""

from __future__ import annotations

import json

from guardian.adapters.slack.blocks import render_detail, render_parent, render_reply
from guardian.app.notify.thread_handover import _adoption, pack_finding, unpack_finding
from guardian.engine.notify.findings import apply_remediation, finding_for_event
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.notifications import (
    HistoryEntry,
    Phase,
    finding_from_dict,
    finding_to_dict,
)
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from guardian.model.shared_episode import SlackParent
from tests.unit.guardian.notify.samples import LABELS, LADDER_EPISODE, RULES, T0, WORKLOAD, firing

LADDER = workload_episode(WORKLOAD, T0)


def _event(step: LadderStep, at: float, **kw: object) -> RemediationEvent:
    return RemediationEvent(
        episode=LADDER,
        workload=WORKLOAD,
        step=step,
        outcome=StepOutcome.APPLIED,
        at=at,
        policy="p",
        reason="idle 30m",
        alert_labels=LABELS,
        **kw,  # type: ignore[arg-type]
    )


def _footers(payload_blocks: list[dict[str, object]]) -> str:
    return json.dumps([b for b in payload_blocks if b.get("type") == "context"])


def test_before_any_ladder_step_the_footer_shows_the_alerts_id_and_says_so() -> None:
    f = firing()
    assert f.ladder_episode is None
    footers = _footers(render_parent(f, T0 + 60).blocks)
    assert f"Alert episode `{f.episode}`" in footers


def test_a_ladder_step_puts_the_ladders_episode_in_every_footer() -> None:
    alert = firing()
    assert alert.episode != LADDER  # the two ids the issue saw differ
    changed = apply_remediation(alert, _event(LadderStep.GRACE, T0 + 600), RULES)
    assert changed is not None
    f, entry = changed
    assert (f.episode, f.ladder_episode) == (alert.episode, LADDER)  # the key stays
    for blocks in (
        render_parent(f, T0 + 600).blocks,
        render_detail(f, T0 + 600).blocks,
        render_reply(entry, f).blocks,
    ):
        footers = _footers(blocks)
        assert f"Episode `{LADDER}`" in footers
        assert alert.episode not in footers
        assert "Alert episode" not in footers


def test_a_group_reply_has_no_episode_to_show() -> None:
    entry = HistoryEntry(T0, Phase.FIRING, "3 alerts.")
    assert "pisode" not in _footers(render_reply(entry, None, "GpuIdle").blocks)


def test_a_ladder_the_notifier_never_saw_fire_is_its_own_episode() -> None:
    f = finding_for_event(_event(LadderStep.NOTIFY, T0), RULES)
    assert f.episode == f.ladder_episode == LADDER


def test_the_ladder_episode_survives_the_outbox_and_the_shared_hand_over() -> None:
    f = firing().with_changes(ladder_episode=LADDER_EPISODE)
    assert finding_from_dict(finding_to_dict(f)) == f
    assert unpack_finding(pack_finding(f), f.labels, f.episode) == f
    old = {k: v for k, v in finding_to_dict(firing()).items() if k != "ladder_episode"}
    assert finding_from_dict(old).ladder_episode is None  # rows written before the field


def test_a_new_leader_adopting_a_thread_shows_the_ladders_episode() -> None:
    alert = firing()  # packed by a leader from before the field: no ladder episode in it
    parent = SlackParent("episode:x", "C1", "C1", "1.000", alert.episode, pack_finding(alert))
    rows = _adoption(LADDER, alert.episode, parent, alert.labels, T0 + 900)
    (row,) = rows.episodes
    assert (row.episode, row.finding.ladder_episode) == (alert.episode, LADDER)
    assert rows.aliases == [(LADDER, alert.episode)]
