"""For-state restoration: Prometheus's three cases, grace period and outage tolerance."""

from __future__ import annotations

import pytest

from guardian.engine.rules.for_state import RestorePolicy, restore_for_state
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
