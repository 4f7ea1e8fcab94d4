"""The per-alert step of an alerting rule (Prometheus's AlertingRule.Eval), one row per
entry of its transition table: the state, whether the answer has the alert, and the
clock against ``for``, ``keep_firing_for`` and the 15 minutes a resolved alert is kept."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from guardian.engine.rules.alerting import TRANSITIONS, Timing, advance
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet

T0 = 1_700_000_000.0
P, F, R = AlertState.PENDING, AlertState.FIRING, AlertState.INACTIVE  # R: resolved
FOR_5M = Timing(for_ms=300_000, keep_firing_ms=0)
KEEP_10M = Timing(for_ms=0, keep_firing_ms=600_000)


def _alert(state: AlertState, **fields: float) -> Alert:
    return Alert(LabelSet({"alertname": "A"}), LabelSet(), state, T0, 0.0, **fields)


@dataclass(frozen=True)
class Row:
    id: str
    alert: Alert
    present: bool
    at: float
    timing: Timing
    kept: AlertState | None  # None: dropped from the map
    shown: AlertState
    counts: bool


ROWS = [
    Row("pending, held less than for", _alert(P), True, T0 + 299.999, FOR_5M, P, P, True),
    Row("pending, held exactly for", _alert(P), True, T0 + 300, FOR_5M, F, F, True),
    Row("pending, for 0 fires at once", _alert(P), True, T0, KEEP_10M, F, F, True),
    Row("pending, gone: dropped, resolved", _alert(P), False, T0 + 60, FOR_5M, None, R, False),
    Row("firing, still there", _alert(F, fired_at=T0), True, T0 + 60, FOR_5M, F, F, True),
    Row("firing, gone: resolved", _alert(F, fired_at=T0), False, T0 + 60, FOR_5M, R, R, False),
    Row(
        "firing, gone, keep_firing_for not over",
        _alert(F, fired_at=T0, keep_firing_since=T0 + 60),
        False,
        T0 + 659.999,
        KEEP_10M,
        F,
        F,
        True,
    ),
    Row(
        "firing, gone, keep_firing_for over",
        _alert(F, fired_at=T0, keep_firing_since=T0 + 60),
        False,
        T0 + 660,
        KEEP_10M,
        R,
        R,
        False,
    ),
    Row("firing, gone, first keep", _alert(F, fired_at=T0), False, T0 + 60, KEEP_10M, F, F, True),
    Row(
        "resolved, within 15m",
        _alert(R, resolved_at=T0 + 60),
        False,
        T0 + 960,
        FOR_5M,
        R,
        R,
        False,
    ),
    Row(
        "resolved, past 15m: forgotten",
        _alert(R, resolved_at=T0 + 60),
        False,
        T0 + 960.001,
        FOR_5M,
        None,
        R,
        False,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_each_entry_of_the_transition_table(row: Row) -> None:
    step = advance(row.alert, row.present, row.at, row.timing)
    assert (step.kept.state if step.kept else None) == row.kept
    assert step.shown.state is row.shown
    assert step.counts is row.counts
    if row.shown is F and row.alert.state is P:
        assert step.shown.fired_at == row.at
    if row.shown is R and row.alert.state is not R:
        assert step.shown.resolved_at == row.at


def test_keep_firing_since_is_set_once_and_cleared_when_it_returns() -> None:
    firing = _alert(F, fired_at=T0)
    kept = advance(firing, False, T0 + 60, KEEP_10M).kept
    assert kept is not None
    assert kept.keep_firing_since == T0 + 60
    again = advance(kept, False, T0 + 120, KEEP_10M).kept
    assert again is not None
    assert again.keep_firing_since == T0 + 60  # the first absence counts
    back = advance(again, True, T0 + 180, KEEP_10M).kept
    assert back is not None
    assert back.keep_firing_since is None


def test_the_table_covers_every_state_present_or_not() -> None:
    assert set(TRANSITIONS) == {(s, present) for s in AlertState for present in (True, False)}
