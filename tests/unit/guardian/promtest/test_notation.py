"""promtool's series notation, as Prometheus 2.42's PromQL parser expands it."""

from __future__ import annotations

import math

import pytest

from guardian.engine.promtest.notation import STALE, NotationError, parse_metric, parse_values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 2 3", [1.0, 2.0, 3.0]),
        ("1x3", [1.0] * 4),  # axN: N+1 samples
        ("1+1x3", [1.0, 2.0, 3.0, 4.0]),
        ("10-2x2", [10.0, 8.0, 6.0]),
        ("-1+-1x1", None),  # not valid: the step has one sign
        ("_", [None]),
        ("_x3", [None] * 3),  # _xN: N samples, not N+1
        ("1 _x2 3", [1.0, None, None, 3.0]),
        ("0x3", [0.0] * 4),  # no hexadecimal in series values
        ("-5 +2 .5 1e3 1.5E-1", [-5.0, 2.0, 0.5, 1000.0, 0.15]),
        ("1e3x1", [1000.0, 1000.0]),
        ("", []),
    ],
)
def test_values(text: str, expected: list[float | None] | None) -> None:
    if expected is None:
        with pytest.raises(NotationError):
            parse_values(text)
    else:
        assert parse_values(text) == expected


def test_steps_accumulate_by_repeated_addition_as_go_does() -> None:
    values = parse_values("0+0.1x3")

    assert values == [0.0, 0.1, 0.2, 0.30000000000000004]
    assert values[3] != 3 * 0.1 or values[3] == 0.1 + 0.1 + 0.1


def test_inf_nan_and_stale() -> None:
    values = parse_values("Inf -Inf +inf NaN nan stale stalex1 1")

    assert values[:3] == [math.inf, -math.inf, math.inf]
    assert all(isinstance(v, float) and math.isnan(v) for v in values[3:5])
    assert values[5:8] == [STALE, STALE, STALE]
    assert values[8] == 1.0


@pytest.mark.parametrize("text", ["abc", "1x", "x3", "1+x3", "stale+1x2", "1,2", "_x"])
def test_bad_values_are_errors(text: str) -> None:
    with pytest.raises(NotationError):
        parse_values(text)


def test_metric_descriptions() -> None:
    assert parse_metric('m{a="1", b="x y"}') == {"__name__": "m", "a": "1", "b": "x y"}
    assert parse_metric('{__name__="up", job="j",}') == {"__name__": "up", "job": "j"}
    assert parse_metric("ns:rate5m") == {"__name__": "ns:rate5m"}
    escaped = parse_metric(r'm{a="q\"t\n", b=`raw\n`}')
    assert escaped == {"__name__": "m", "a": 'q"t\n', "b": "raw\\n"}
    assert parse_metric("m{a=''}") == {"__name__": "m", "a": ""}
    assert parse_metric(" {} ") == {}


@pytest.mark.parametrize("text", ["", 'm{a!="1"}', "m{a=1}", 'm{a="1"', 'm{a="1",a="2"}', "m x"])
def test_bad_metric_descriptions(text: str) -> None:
    with pytest.raises(NotationError):
        parse_metric(text)
