"""Folding transitions and ladder events into findings; evidence, cost, routing, mute windows."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from guardian.engine.notify.findings import (
    AlertFacts,
    FindingRules,
    PriceTable,
    apply_remediation,
    apply_transition,
    new_finding,
    split_mentions,
)
from guardian.engine.notify.routing import MuteWindow, Routes, muted
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.notifications import (
    OwnerContext,
    Phase,
    finding_from_dict,
    finding_to_dict,
)
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, episode_id
from tests.unit.guardian.notify.samples import ANNOTATIONS, CONTEXT, LABELS, RULES, T0, WORKLOAD


def _t(
    kind: TransitionKind, at: float, health: EvaluationHealth = EvaluationHealth.OK
) -> AlertTransition:
    return AlertTransition(
        kind=kind,
        previous=AlertState.PENDING,
        group="g",
        rule="GpuIdle",
        labels=LABELS,
        annotations=ANNOTATIONS,
        value=0.012,
        active_at=T0,
        at=at,
        evidence=Evidence(
            health, at, "q", error="limit exceeded" if health is EvaluationHealth.FAILED else None
        ),
    )


def _e(
    step: LadderStep, at: float, outcome: StepOutcome = StepOutcome.APPLIED, **kw: object
) -> RemediationEvent:
    return RemediationEvent(
        episode=episode_id(LABELS, T0),
        workload=WORKLOAD,
        step=step,
        outcome=outcome,
        at=at,
        policy="p",
        reason="idle 30m",
        alert_labels=LABELS,
        **kw,  # type: ignore[arg-type]
    )


def test_price_table_matches_exact_then_longest_substring_then_default() -> None:
    table = PriceTable(
        {"A100": 4.0, "A100-SXM4-80GB": 5.0, "NVIDIA H100 80GB HBM3": 9.0}, default=1.0
    )
    assert table.price("NVIDIA H100 80GB HBM3") == 9.0
    assert table.price("NVIDIA A100-SXM4-80GB") == 5.0
    assert table.price("nvidia a100-pcie-40gb") == 4.0
    assert table.price("Tesla T4") == 1.0
    assert table.price(None) == 1.0
    assert PriceTable().price("anything") is None


def test_new_finding_takes_evidence_from_value_labels_and_annotations() -> None:
    f = new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.012, T0), T0 + 3600, RULES, CONTEXT)
    assert f.episode == episode_id(LABELS, T0)
    assert (f.cluster, f.namespace, f.node, f.gpu_group) == (
        "prod-eu",
        "ml-research",
        "gpu-node-12",
        "a100-80g",
    )
    assert f.workload == WORKLOAD
    assert f.evidence.peak_utilization == pytest.approx(0.012)
    assert f.evidence.memory_used_bytes == 3 * 2**30
    assert f.evidence.idle_since == T0 - 1800  # the GpuIdle window before active_at
    assert f.cost is not None
    assert f.cost.per_hour == 4.1
    assert f.cost.waste_so_far == pytest.approx(4.1 * 1.5)
    assert f.mentions == ("U0ALICE", "@here")  # the workload's annotation wins
    assert f.runbook_url == "https://gpu-guardian.io/runbooks/gpuidle"


def test_memory_rule_value_is_the_peak_memory_ratio_and_annotations_override_windows() -> None:
    labels = LabelSet({**LABELS, "alertname": "GpuMemoryUnderutilized"})
    f = new_finding(AlertFacts(labels, LabelSet({"idle_window": "2h"}), 0.07, T0), T0, RULES, None)
    assert f.evidence.peak_memory_ratio == 0.07
    assert f.evidence.peak_utilization is None
    assert f.evidence.idle_since == T0 - 7200
    nan = new_finding(
        AlertFacts(LABELS, LabelSet({"idle_since": "123", "peak_utilization": "x"}), math.nan, T0),
        T0,
        RULES,
        None,
    )
    assert nan.evidence.peak_utilization is None
    assert nan.evidence.idle_since == 123
    other = new_finding(
        AlertFacts(LabelSet({"alertname": "Other"}), LabelSet(), 5.0, T0), T0, FindingRules(), None
    )
    # An alert without an idle window (a pipeline alert) is not "idle for" anything.
    assert other.evidence.idle_since is None
    assert other.cost is None


def test_a_share_of_a_gpu_costs_that_share_and_advice_is_kept() -> None:
    labels = LabelSet({**LABELS, "alertname": "GpuShareIdle"})
    notes = LabelSet(
        {"share": "0.25", "idle_window": "30m", "advice": "  MIG 1g.10gb would have held it.  "}
    )
    f = new_finding(AlertFacts(labels, notes, 0.25, T0), T0 + 3600, RULES, CONTEXT)
    assert f.evidence.share == 0.25
    assert f.advice == "MIG 1g.10gb would have held it."
    assert f.cost is not None
    assert f.cost.per_hour == pytest.approx(4.1 * 0.25)
    # idle since the window before active_at: 1h30m of a quarter GPU
    assert f.cost.waste_so_far == pytest.approx(4.1 * 0.25 * 1.5)
    whole = new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.0, T0), T0 + 3600, RULES, CONTEXT)
    assert (whole.evidence.share, whole.advice) == (None, None)


@pytest.mark.parametrize("text", ["0", "-0.5", "1.5", "nan", "inf", "half", ""])
def test_a_share_outside_0_to_1_is_ignored(text: str) -> None:
    f = new_finding(AlertFacts(LABELS, LabelSet({"share": text}), 0.0, T0), T0 + 3600, RULES, None)
    assert f.evidence.share is None
    assert f.cost is not None
    assert f.cost.per_hour == 4.1


def test_namespace_mention_applies_when_the_workload_has_none() -> None:
    ctx = OwnerContext(namespace_annotations=LabelSet({"gpu-guardian.io/slack-mention": "S0TEAM"}))
    assert ctx.mention == "S0TEAM"
    assert OwnerContext().mention is None
    assert split_mentions("U1, U2 U1 ,@here") == ("U1", "U2", "@here")


def test_transitions_fire_once_and_resolve_once() -> None:
    fired = apply_transition(None, _t(TransitionKind.FIRING, T0 + 300), RULES, CONTEXT)
    assert fired is not None
    f, entry = fired
    assert (f.phase, entry.phase, entry.mentions) == (Phase.FIRING, Phase.FIRING, f.mentions)
    assert apply_transition(f, _t(TransitionKind.FIRING, T0 + 360), RULES, CONTEXT) is None
    assert apply_transition(None, _t(TransitionKind.RESOLVED, T0 + 360), RULES, None) is None
    assert apply_transition(None, _t(TransitionKind.PENDING, T0), RULES, None) is None
    done = apply_transition(f, _t(TransitionKind.RESOLVED, T0 + 900), RULES, None)
    assert done is not None
    assert (done[0].phase, done[0].resolved_at, done[0].open) == (Phase.RESOLVED, T0 + 900, False)
    assert done[0].cost is not None
    assert done[0].cost.waste_so_far == pytest.approx(4.1 * 2700 / 3600)  # stops at resolve
    assert apply_transition(done[0], _t(TransitionKind.RESOLVED, T0 + 960), RULES, None) is None


def test_an_unhealthy_resolve_says_so() -> None:
    f, _ = apply_transition(None, _t(TransitionKind.FIRING, T0), RULES, None) or pytest.fail(
        "no change"
    )
    done = apply_transition(
        f, _t(TransitionKind.RESOLVED, T0 + 60, EvaluationHealth.FAILED), RULES, None
    )
    assert done is not None
    assert done[0].evaluation_note == "evaluation failed: limit exceeded"
    assert "evaluation failed" in done[1].text


def test_the_ladder_moves_the_phase() -> None:
    f, _ = apply_transition(None, _t(TransitionKind.FIRING, T0), RULES, None) or pytest.fail(
        "no change"
    )
    g, entry = apply_remediation(
        f,
        _e(LadderStep.GRACE, T0 + 60, next_step=LadderStep.RECLAIM, next_step_due=T0 + 1860),
        RULES,
    ) or pytest.fail("no change")
    assert (g.phase, g.next_step, g.next_step_due, g.policy) == (
        Phase.GRACE,
        LadderStep.RECLAIM,
        T0 + 1860,
        "p",
    )
    assert (entry.next_step, entry.next_step_due) == (LadderStep.RECLAIM, T0 + 1860)
    dry, entry = apply_remediation(
        g, _e(LadderStep.RECLAIM, T0 + 1860, StepOutcome.DRY_RUN), RULES
    ) or pytest.fail("no change")
    assert dry.phase is Phase.GRACE
    assert entry.text.startswith("Dry run: would reclaim")
    refused, entry = apply_remediation(
        g, _e(LadderStep.RECLAIM, T0 + 1860, StepOutcome.REFUSED), RULES
    ) or pytest.fail("no change")
    assert refused.phase is Phase.GRACE
    assert entry.text == "Step reclaim refused: idle 30m."
    r, entry = apply_remediation(
        g,
        _e(
            LadderStep.RECLAIM,
            T0 + 1860,
            original_replicas=3,
            restore_command="guardian restore x",
        ),
        RULES,
    ) or pytest.fail("no change")
    assert (r.phase, r.reclaimed_at, r.restore_command, r.open) == (
        Phase.RECLAIMED,
        T0 + 1860,
        "guardian restore x",
        False,
    )
    assert "(was 3 replicas)" in entry.text
    back, _ = apply_remediation(r, _e(LadderStep.RESTORE, T0 + 9000), RULES) or pytest.fail(
        "no change"
    )
    assert (back.phase, back.restore_command) == (Phase.RESTORED, None)
    assert back.cost is not None
    assert back.cost.waste_so_far == pytest.approx(4.1 * (1860 + 1800) / 3600)  # until reclaimed


def test_finding_round_trips_through_json() -> None:
    f = new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.012, T0), T0 + 3600, RULES, CONTEXT)
    r, _ = apply_remediation(
        f, _e(LadderStep.RECLAIM, T0 + 1, restore_command="x"), RULES
    ) or pytest.fail("no change")
    assert finding_from_dict(finding_to_dict(r)) == r


def test_share_and_advice_round_trip_and_rows_written_before_them_still_load() -> None:
    notes = LabelSet({**ANNOTATIONS, "share": "0.5", "advice": "A 1/2 time-slice share."})
    f = new_finding(AlertFacts(LABELS, notes, 0.0, T0), T0 + 3600, RULES, CONTEXT)
    assert finding_from_dict(finding_to_dict(f)) == f
    old_row = finding_to_dict(f)
    del old_row["advice"]
    del old_row["evidence"]["share"]
    back = finding_from_dict(old_row)
    assert (back.evidence.share, back.advice) == (None, None)


def test_routes_policy_then_namespace_then_gpu_group_then_default() -> None:
    f = new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.0, T0), T0, RULES, None)
    routes = Routes("#default", {"p": "#policy"}, {"ml-research": "#ns"}, {"a100-80g": "#group"})
    assert routes.channel_for(f) == "#ns"
    assert routes.channel_for(f.with_changes(policy="p")) == "#policy"
    assert routes.channel_for(f.with_changes(namespace="other")) == "#group"
    assert routes.channel_for(f.with_changes(namespace=None, gpu_group=None)) == "#default"


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_mute_windows() -> None:
    f = new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.0, T0), T0, RULES, None)
    utc = ZoneInfo("UTC")
    absolute = MuteWindow(
        utc, start=_at("2026-12-24T00:00:00+00:00"), end=_at("2026-12-27T00:00:00+00:00")
    )
    assert absolute.covers(f, _at("2026-12-25T12:00:00+00:00"))
    assert not absolute.covers(f, _at("2026-12-27T00:00:00+00:00"))
    nights = MuteWindow(
        ZoneInfo("Europe/Berlin"), weekdays=frozenset({4}), daily_start=22 * 60, daily_end=6 * 60
    )
    # Friday 23:00 and Saturday 05:00 Berlin belong to Friday night; Saturday 23:00 does not.
    assert nights.covers(f, _at("2026-11-27T22:00:00+00:00"))
    assert nights.covers(f, _at("2026-11-28T04:00:00+00:00"))
    assert not nights.covers(f, _at("2026-11-28T22:00:00+00:00"))
    assert not nights.covers(f, _at("2026-11-27T12:00:00+00:00"))
    scoped = MuteWindow(utc, start=0.0, namespaces=frozenset({"other"}))
    assert not scoped.covers(f, T0)
    assert muted((scoped, absolute), f, _at("2026-12-25T00:00:00+00:00"))
    assert not muted((), f, T0)
    assert datetime.fromtimestamp(T0, UTC).year == 2025
