"""For-state restoration: Prometheus's three cases, grace period and outage tolerance, from
the local cache and from ALERTS_FOR_STATE."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from guardian.engine.rules.alert_series import ALERTS_FOR_STATE_METRIC, build_alert_series
from guardian.engine.rules.restart_restore import (
    RestorePolicy,
    RestoreReason,
    SeriesEnd,
    ended_with_marker,
    for_state_labels,
    for_state_range,
    for_state_selector,
    matching,
    plan_series_restore,
    restore_for_state,
    series_sample,
)
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.rules import AlertingRule

DOWN = 1_700_000_000.0
LABELS = LabelSet({"alertname": "A", "pod": "p"})


def _pending(active_at: float) -> dict[LabelSet, Alert]:
    return {LABELS: Alert(LABELS, LabelSet(), AlertState.PENDING, active_at, 1.0)}


@pytest.mark.parametrize(
    ("for_s", "pending_for", "downtime", "expected_active_at"),
    [
        # 30m timer, 20m done, down 5m: remaining 10m >= grace, so the outage is not counted.
        (1800, 1200, 300, DOWN - 1200 + 300),
        # 30m timer, 25m done: 5m left < 10m grace: fires one grace period after restart.
        (1800, 1500, 300, DOWN + 300 + 600 - 1800),
        # 30m timer, already elapsed before the outage: keeps ActiveAt, fires at once.
        (1800, 1800, 300, DOWN - 1800),
    ],
)
def test_three_cases(
    for_s: float, pending_for: float, downtime: float, expected_active_at: float
) -> None:
    rule = AlertingRule("A", "m", for_seconds=for_s)

    out = restore_for_state(rule, _pending(DOWN - pending_for), down_at=DOWN, now=DOWN + downtime)

    assert out[LABELS].active_at == expected_active_at
    assert out[LABELS].state is AlertState.PENDING


def test_short_for_and_long_outage_start_over() -> None:
    short = AlertingRule("A", "m", for_seconds=300)
    assert restore_for_state(short, _pending(DOWN - 100), down_at=DOWN, now=DOWN + 60) == {}

    long_rule = AlertingRule("A", "m", for_seconds=1800)
    policy = RestorePolicy(outage_tolerance_seconds=3600)
    out = restore_for_state(
        long_rule, _pending(DOWN - 100), down_at=DOWN, now=DOWN + 3601, policy=policy
    )
    assert out == {}


def test_firing_and_resolved_alerts_are_kept_as_they_were() -> None:
    rule = AlertingRule("A", "m", for_seconds=60)
    firing = Alert(LABELS, LabelSet(), AlertState.FIRING, DOWN - 600, 1.0, fired_at=DOWN - 540)
    other = LabelSet({"alertname": "A", "pod": "q"})
    resolved = Alert(other, LabelSet(), AlertState.INACTIVE, DOWN - 600, 1.0, resolved_at=DOWN)

    out = restore_for_state(rule, {LABELS: firing, other: resolved}, down_at=DOWN, now=DOWN + 7200)

    assert out == {LABELS: firing, other: resolved}


# ---------------------------------------------------------------- from ALERTS_FOR_STATE
NOW = DOWN + 600.25  # the wall clock at the restore, after the second evaluation
GRACE = RestorePolicy(for_grace_seconds=600, outage_tolerance_seconds=3600)


def _end(down: float, active_at: float, **kw: bool) -> SeriesEnd:
    return SeriesEnd(round(down * 1000), active_at, **kw)


def _plan(
    for_s: float, end: SeriesEnd | None, *, cache: float | None = None, now: float = NOW
) -> tuple[RestoreReason, float]:
    rule = AlertingRule("A", "m", for_seconds=for_s)
    fresh = _pending(now - 60)  # what the first two evaluations after the start made
    plan = plan_series_restore(
        rule, fresh, {LABELS: end} if end else {}, now=now, cache_down_at=cache, policy=GRACE
    )
    (decision,) = plan.decisions
    assert plan.active[LABELS].active_at == decision.active_at
    return decision.reason, decision.active_at


def test_series_three_cases_use_whole_seconds_and_the_wall_clock() -> None:
    # Prometheus's own example (for 30s, grace 5s): active 415.34, last sample 424.34,
    # restored at 434.34 -> 415 + (434.34 - 424): both truncations show.
    rule = AlertingRule("A", "m", for_seconds=30)
    policy = RestorePolicy(for_grace_seconds=5, outage_tolerance_seconds=3600)
    plan = plan_series_restore(
        rule,
        _pending(430.0),
        {LABELS: SeriesEnd(424_340, 415.0)},
        now=434.34,
        cache_down_at=None,
        policy=policy,
    )
    assert plan.active[LABELS].active_at == pytest.approx(425.34)
    assert plan.decisions[0].reason is RestoreReason.SHIFTED

    # 30m timer, 20m done at the last sample: the downtime does not count.
    assert _plan(1800, _end(DOWN, DOWN - 1200)) == (RestoreReason.SHIFTED, NOW - 1200)
    # 25m done: less than the grace period left: fires one grace period after the restore.
    assert _plan(1800, _end(DOWN, DOWN - 1500)) == (RestoreReason.GRACE, NOW + 600 - 1800)
    # Already elapsed (it was firing): keeps ActiveAt; the next evaluation fires it.
    assert _plan(1800, _end(DOWN, DOWN - 2400)) == (RestoreReason.ELAPSED, DOWN - 2400)


def test_series_for_below_grace_is_not_restored_but_equal_is() -> None:
    assert _plan(599, _end(DOWN, DOWN - 500)) == (RestoreReason.SHORT_FOR, NOW - 60)
    assert _plan(600, _end(DOWN, DOWN - 500))[0] is RestoreReason.GRACE


def test_series_window_is_closed_at_the_outage_tolerance() -> None:
    end = _end(DOWN, DOWN - 1200)
    at_edge = DOWN + 3600
    assert _plan(1800, end, now=at_edge)[0] is RestoreReason.SHIFTED
    assert _plan(1800, end, now=at_edge + 0.001) == (RestoreReason.NO_SERIES, at_edge - 59.999)
    assert _plan(1800, None)[0] is RestoreReason.NO_SERIES


def test_series_ended_by_a_staleness_marker_starts_over() -> None:
    end = _end(DOWN, DOWN - 1200, resolved=True)
    assert _plan(1800, end) == (RestoreReason.RESOLVED, NOW - 60)


def test_the_newer_observation_wins_and_the_cache_wins_a_tie() -> None:
    end = _end(DOWN, DOWN - 1200)
    assert _plan(1800, end, cache=DOWN) == (RestoreReason.CACHE_NEWER, NOW - 60)
    assert _plan(1800, end, cache=DOWN + 60)[0] is RestoreReason.CACHE_NEWER
    assert _plan(1800, end, cache=DOWN - 60)[0] is RestoreReason.SHIFTED


def test_series_restore_restores_firing_alerts_too_state_and_fired_at_kept() -> None:
    # As Prometheus ("every alert now in the map, any state"): an alert that fired in the
    # first two evaluations (its `for` elapsed across a missed slot, no cache) gets the
    # ActiveAt it had before the restart; it stays firing, with its FiredAt.
    rule = AlertingRule("A", "m", for_seconds=600)
    fresh = Alert(LABELS, LabelSet(), AlertState.FIRING, NOW - 660, 1.0, fired_at=NOW - 20)
    plan = plan_series_restore(
        rule,
        {LABELS: fresh},
        {LABELS: _end(DOWN, DOWN - 3000.5)},
        now=NOW,
        cache_down_at=None,
        policy=GRACE,
    )
    assert plan.active == {LABELS: replace(fresh, active_at=DOWN - 3001)}
    assert [d.reason for d in plan.decisions] == [RestoreReason.ELAPSED]


def test_series_restore_keeps_a_firing_alert_the_cache_saw_later_or_whose_series_ended() -> None:
    rule = AlertingRule("A", "m", for_seconds=1800)
    firing = Alert(LABELS, LabelSet(), AlertState.FIRING, DOWN - 9000, 1.0, fired_at=DOWN - 7200)

    def plan(end: SeriesEnd, cache: float | None) -> tuple[dict[LabelSet, Alert], RestoreReason]:
        out = plan_series_restore(
            rule, {LABELS: firing}, {LABELS: end}, now=NOW, cache_down_at=cache, policy=GRACE
        )
        (decision,) = out.decisions
        return out.active, decision.reason

    assert plan(_end(DOWN, DOWN - 60), DOWN) == ({LABELS: firing}, RestoreReason.CACHE_NEWER)
    ended = _end(DOWN, DOWN - 60, resolved=True)
    assert plan(ended, None) == ({LABELS: firing}, RestoreReason.RESOLVED)


@dataclass(frozen=True)
class _Series:
    labels: LabelSet


def test_matching_wants_the_exact_label_set_plus_only_our_external_labels() -> None:
    wanted = LabelSet({"__name__": "ALERTS_FOR_STATE", "alertname": "A", "pod": "p"})
    exact = _Series(wanted)
    ours = _Series(LabelSet({**wanted, "cluster": "prod"}))
    other_cluster = _Series(LabelSet({**wanted, "cluster": "dev"}))
    more = _Series(LabelSet({**wanted, "container": "c"}))
    fewer = _Series(wanted.without("pod"))
    candidates = [exact, ours, other_cluster, more, fewer]

    assert matching(wanted, candidates, {}) == [exact]
    assert matching(wanted, candidates, {"cluster": "prod"}) == [exact, ours]
    # An alert label named like an external label keeps the alert's value.
    own = LabelSet({**wanted, "cluster": "dev"})
    assert matching(own, candidates, {"cluster": "prod"}) == [other_cluster]


def test_the_restore_looks_for_the_series_remote_write_writes() -> None:
    alert = Alert(
        LabelSet({"alertname": "A", "pod": "p", "empty": ""}),
        LabelSet(),
        AlertState.PENDING,
        DOWN - 0.5,
        1.0,
    )
    # Raw rule labels (a template, an empty one) are part of the written series' labels.
    rule_labels = {"owner": "{{ $labels.pod }}", "team": ""}
    (written,) = [
        s
        for s in build_alert_series([series_sample(alert, rule_labels)], 1)
        if s.name == ALERTS_FOR_STATE_METRIC
    ]
    assert written.labels["owner"] == "{{ $labels.pod }}"
    assert for_state_labels(alert, rule_labels) == LabelSet(written.labels)
    assert for_state_selector('Gpu"Idle') == 'ALERTS_FOR_STATE{alertname="Gpu\\"Idle"}'
    assert for_state_range("A", 3600) == 'ALERTS_FOR_STATE{alertname="A"}[3600001ms]'


@pytest.mark.parametrize(
    ("present", "interval", "expected"),
    [
        ({0, 60_000}, 60_000, False),  # still seen one interval later: no marker
        ({0}, 60_000, True),  # gone one interval later: a staleness marker
        ({0}, 300_000, False),  # beyond the lookback: cannot tell, assume none
    ],
)
def test_a_marker_shows_as_absence_one_interval_after_the_last_sample(
    present: set[int], interval: int, expected: bool
) -> None:
    steps = list(range(0, 600_001, 60_000))
    assert ended_with_marker(0, steps, present, interval) is expected
    # No step after the sample yet (it was the last evaluation before now): no marker.
    assert ended_with_marker(600_000, steps, {600_000}, 60_000) is False
