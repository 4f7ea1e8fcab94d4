"""promtool's schedule and comparisons, with its failure messages."""

from __future__ import annotations

import math

from guardian.engine.promtest.compare import (
    AlertSeen,
    alert_tests_at,
    compare_alerts,
    compare_samples,
    eval_steps,
    format_float_e,
    labels_string,
)
from guardian.engine.promtest.model import (
    AlertTestCase,
    ExpectedAlert,
    ExpectedSample,
    PromqlTestCase,
)


def test_steps_run_to_the_last_eval_time_inclusive() -> None:
    assert eval_steps(180_000, 60_000) == [0, 60_000, 120_000, 180_000]
    assert eval_steps(150_000, 60_000) == [0, 60_000, 120_000]
    assert eval_steps(0, 60_000) == [0]


def test_alerts_are_checked_at_the_last_step_not_after_eval_time() -> None:
    cases = [AlertTestCase(t, "A", ()) for t in (0, 90_000, 120_000)]

    assert [c.eval_time_ms for c in alert_tests_at(60_000, 60_000, cases)] == [90_000]
    assert [c.eval_time_ms for c in alert_tests_at(120_000, 60_000, cases)] == [120_000]


def _seen(labels: dict[str, str], notes: dict[str, str]) -> AlertSeen:
    return AlertSeen(tuple(sorted(labels.items())), tuple(sorted(notes.items())))


def test_alerts_match_in_any_order_with_alertname_added() -> None:
    case = AlertTestCase(
        300_000,
        "A",
        (ExpectedAlert({"id": "2"}, {"s": "two"}), ExpectedAlert({"id": "1"}, {"s": "one"})),
    )
    got = [
        _seen({"alertname": "A", "id": "1"}, {"s": "one"}),
        _seen({"alertname": "A", "id": "2"}, {"s": "two"}),
    ]

    assert compare_alerts("t", case, got) is None
    assert compare_alerts("t", case, got[:1]) is not None


def test_annotations_must_match_exactly() -> None:
    case = AlertTestCase(0, "A", (ExpectedAlert({}, {}),))

    message = compare_alerts("", case, [_seen({"alertname": "A"}, {"summary": "x"})])

    assert message == (
        "    alertname: A, time: 0s, \n"
        "        exp:[\n"
        "            0:\n"
        '              Labels:{alertname="A"}\n'
        "              Annotations:{}\n"
        "            ], \n"
        "        got:[\n"
        "            0:\n"
        '              Labels:{alertname="A"}\n'
        '              Annotations:{summary="x"}\n'
        "            ]"
    )


def test_sample_comparison_and_message() -> None:
    case = PromqlTestCase('m{a="1"}', 90_000, (ExpectedSample('m{a="1"}', 2.0),))

    assert compare_samples("n", case, [({"__name__": "m", "a": "1"}, 2.0)]) is None
    message = compare_samples("n", case, [])
    assert message == (
        '    expr: "m{a=\\"1\\"}", time: 1m30s,\n'
        '        exp: {__name__="m", a="1"} 2E+00\n'
        "        got: nil"
    )


def test_nan_never_equals_nan_as_in_promtool() -> None:
    case = PromqlTestCase("m", 0, (ExpectedSample("m", math.nan),))

    assert compare_samples("", case, [({"__name__": "m"}, math.nan)]) is not None


def test_bad_expected_labels_are_reported() -> None:
    case = PromqlTestCase("m", 0, (ExpectedSample("m{", 1.0),))

    assert 'err: labels "m{"' in (compare_samples("", case, []) or "")


def test_go_formatting() -> None:
    assert format_float_e(1.0) == "1E+00"
    assert format_float_e(150.0) == "1.5E+02"
    assert format_float_e(0.1) == "1E-01"
    assert format_float_e(1234567.0) == "1.234567E+06"
    assert format_float_e(-math.inf) == "-Inf"
    assert labels_string({"b": 'x"', "a": "1"}) == '{a="1", b="x\\""}'
