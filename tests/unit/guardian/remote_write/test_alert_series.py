"""ALERTS and ALERTS_FOR_STATE series, and staleness markers, as Prometheus writes them."""

from __future__ import annotations

import math
import struct

import pytest

from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.model.alerts import AlertState
from guardian.model.series import STALE_NAN, ActiveAlertSample, TimeSeries, is_stale_marker

TS = 1_700_000_060_000


def _alert(state: AlertState, active_at: float, **labels: str) -> ActiveAlertSample:
    return ActiveAlertSample({"alertname": "GpuIdle", **labels}, state, active_at)


def _flat(series: list[TimeSeries]) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    return [(dict(s.labels), list(s.samples)) for s in series]


def test_one_firing_alert_writes_alerts_and_for_state() -> None:
    alert = _alert(AlertState.FIRING, 1_700_000_000.0, pod="train-0", severity="warning")

    series = build_alert_series([alert], TS)

    assert _flat(series) == [
        (
            {
                "__name__": "ALERTS",
                "alertname": "GpuIdle",
                "alertstate": "firing",
                "pod": "train-0",
                "severity": "warning",
            },
            [(TS, 1.0)],
        ),
        (
            {
                "__name__": "ALERTS_FOR_STATE",
                "alertname": "GpuIdle",
                "pod": "train-0",
                "severity": "warning",
            },
            [(TS, 1_700_000_000.0)],
        ),
    ]
    assert all(list(s.labels) == sorted(s.labels) for s in series)


def test_pending_alert_has_pending_state_and_for_state_floors_to_whole_seconds() -> None:
    series = build_alert_series([_alert(AlertState.PENDING, 1_700_000_000.999)], TS)

    assert _flat(series) == [
        ({"__name__": "ALERTS", "alertname": "GpuIdle", "alertstate": "pending"}, [(TS, 1.0)]),
        ({"__name__": "ALERTS_FOR_STATE", "alertname": "GpuIdle"}, [(TS, 1_700_000_000.0)]),
    ]


def test_alertstate_is_set_on_alerts_only_and_empty_labels_are_dropped() -> None:
    # A result label called alertstate is overwritten in ALERTS (lb.Set) and kept as is in
    # ALERTS_FOR_STATE, which only sets __name__ and alertname.
    alert = _alert(AlertState.FIRING, 10.0, alertstate="odd", container="")

    by_name = {s.name: dict(s.labels) for s in build_alert_series([alert], TS)}

    assert by_name["ALERTS"]["alertstate"] == "firing"
    assert by_name["ALERTS_FOR_STATE"]["alertstate"] == "odd"
    assert all("container" not in labels for labels in by_name.values())


def test_series_are_sorted_by_name_then_labels_whatever_the_input_order() -> None:
    alerts = [
        _alert(AlertState.FIRING, 5.0, pod="b"),
        _alert(AlertState.PENDING, 7.0, pod="a"),
        ActiveAlertSample({"alertname": "Another"}, AlertState.FIRING, 3.0),
    ]

    forward = build_alert_series(alerts, TS)
    backward = build_alert_series(list(reversed(alerts)), TS)

    assert forward == backward
    # Label sets compare as sorted (name, value) lists: alertstate comes before pod.
    assert [(s.name, s.labels["alertname"], s.labels.get("pod")) for s in forward] == [
        ("ALERTS", "Another", None),
        ("ALERTS", "GpuIdle", "b"),
        ("ALERTS", "GpuIdle", "a"),
        ("ALERTS_FOR_STATE", "Another", None),
        ("ALERTS_FOR_STATE", "GpuIdle", "a"),
        ("ALERTS_FOR_STATE", "GpuIdle", "b"),
    ]


def test_same_label_set_twice_gives_one_series_each_with_the_earlier_active_at() -> None:
    # Two rules with the same name and labels: a receiver refuses two different values for
    # one series at one timestamp, so they must be merged.
    alerts = [_alert(AlertState.FIRING, 200.0), _alert(AlertState.FIRING, 100.0)]

    series = build_alert_series(alerts, TS)

    assert _flat(series) == [
        ({"__name__": "ALERTS", "alertname": "GpuIdle", "alertstate": "firing"}, [(TS, 1.0)]),
        ({"__name__": "ALERTS_FOR_STATE", "alertname": "GpuIdle"}, [(TS, 100.0)]),
    ]


def test_no_alerts_no_series() -> None:
    assert build_alert_series([], TS) == []


def test_an_inactive_alert_is_not_an_active_sample() -> None:
    with pytest.raises(ValueError, match="pending or firing"):
        _alert(AlertState.INACTIVE, 1.0)
    with pytest.raises(ValueError, match="alertname"):
        ActiveAlertSample({"pod": "x"}, AlertState.FIRING, 1.0)
    with pytest.raises(ValueError, match="finite"):
        _alert(AlertState.FIRING, math.nan)


def test_stale_markers_for_series_that_are_gone() -> None:
    before = build_alert_series(
        [_alert(AlertState.PENDING, 100.0, pod="a"), _alert(AlertState.FIRING, 50.0, pod="b")],
        TS,
    )
    # pod=a went from pending to firing (a new ALERTS series), pod=b resolved.
    now = build_alert_series([_alert(AlertState.FIRING, 100.0, pod="a")], TS + 60_000)

    stale = stale_series(before, now, TS + 60_000)

    assert [dict(s.labels) for s in stale] == [
        {"__name__": "ALERTS", "alertname": "GpuIdle", "alertstate": "firing", "pod": "b"},
        {"__name__": "ALERTS", "alertname": "GpuIdle", "alertstate": "pending", "pod": "a"},
        {"__name__": "ALERTS_FOR_STATE", "alertname": "GpuIdle", "pod": "b"},
    ]
    for series in stale:
        ((timestamp, value),) = series.samples
        assert timestamp == TS + 60_000
        assert is_stale_marker(value)


def test_nothing_is_stale_when_nothing_changed_or_nothing_was_written() -> None:
    series = build_alert_series([_alert(AlertState.FIRING, 1.0)], TS)

    assert stale_series(series, build_alert_series([_alert(AlertState.FIRING, 1.0)], TS), TS) == []
    assert stale_series([], series, TS) == []


def test_stale_marker_is_the_prometheus_bit_pattern_not_any_nan() -> None:
    assert struct.pack(">d", STALE_NAN).hex() == "7ff0000000000002"
    assert is_stale_marker(STALE_NAN)
    assert not is_stale_marker(math.nan)
    assert not is_stale_marker(1.0)


@pytest.mark.parametrize(
    ("labels", "samples", "message"),
    [
        ({"job": "x"}, [], "no __name__"),
        ({"__name__": "m", "bad-name": "x"}, [], "invalid label name"),
        ({"__name__": "m", "pod": ""}, [], "non-empty"),
        ({"__name__": "m"}, [(2, 1.0), (1, 1.0)], "ascending"),
        ({"__name__": "m"}, [(1, 1.0), (1, 2.0)], "ascending"),
        ({"__name__": "m"}, [(1.5, 1.0)], "int ms"),
    ],
)
def test_time_series_refuses_what_a_receiver_would_reject(
    labels: dict[str, str], samples: list[tuple[int, float]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TimeSeries(labels, samples)


def test_time_series_is_immutable_hashable_and_sorted() -> None:
    labels = {"z": "1", "__name__": "m", "a": "2"}
    series = TimeSeries(labels, [(1, 2.0)])
    labels["z"] = "changed"

    assert list(series.labels.items()) == [("__name__", "m"), ("a", "2"), ("z", "1")]
    assert series == TimeSeries({"a": "2", "__name__": "m", "z": "1"}, ((1, 2.0),))
    assert len({series, TimeSeries({"a": "2", "__name__": "m", "z": "1"}, [(1, 2.0)])}) == 1


def test_series_are_built_on_the_rule_labels_as_written() -> None:
    # Prometheus's sample()/forStateSample(): the builder's base is the rule's raw labels.
    # `team` expanded to "" and left the alert; the series keep its template text.
    # `owner` expanded and the alert's value wins; `empty` was written as "" and is dropped.
    alert = ActiveAlertSample(
        {"alertname": "GpuIdle", "owner": "ml-owner", "pod": "p"},
        AlertState.FIRING,
        10.0,
        rule_labels={
            "team": "{{ $labels.team }}",
            "owner": "{{ $labels.team }}-owner",
            "empty": "",
        },
    )

    by_name = {s.name: dict(s.labels) for s in build_alert_series([alert], TS)}

    assert by_name["ALERTS"] == {
        "__name__": "ALERTS",
        "alertname": "GpuIdle",
        "alertstate": "firing",
        "owner": "ml-owner",
        "pod": "p",
        "team": "{{ $labels.team }}",
    }
    assert by_name["ALERTS_FOR_STATE"] == {
        "__name__": "ALERTS_FOR_STATE",
        "alertname": "GpuIdle",
        "owner": "ml-owner",
        "pod": "p",
        "team": "{{ $labels.team }}",
    }


def test_a_rule_labelled_alertstate_keeps_it_on_for_state_only() -> None:
    alert = ActiveAlertSample(
        {"alertname": "A", "alertstate": "x"}, AlertState.PENDING, 1.0, {"alertstate": "x"}
    )

    by_name = {s.name: dict(s.labels) for s in build_alert_series([alert], TS)}

    assert by_name["ALERTS"]["alertstate"] == "pending"
    assert by_name["ALERTS_FOR_STATE"]["alertstate"] == "x"
