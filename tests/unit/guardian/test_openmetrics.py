from __future__ import annotations

import math

import pytest

from guardian.adapters.openmetrics import Sample, render_openmetrics


def test_groups_families_and_sorts_series_and_time() -> None:
    text = render_openmetrics(
        [
            Sample("b", {"x": "1"}, 20, 2.0),
            Sample("a", {}, 10, 1.0),
            Sample("b", {"x": "1"}, 10, 1.5),
            Sample("b", {"x": "0"}, 10, 7.0),
        ]
    )

    assert text == (
        'a 1.0 10.000\nb{x="0"} 7.0 10.000\nb{x="1"} 1.5 10.000\nb{x="1"} 2.0 20.000\n# EOF\n'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [(math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf"), (1234567.0, "1234567.0")],
)
def test_special_values(value: float, text: str) -> None:
    assert render_openmetrics([Sample("m", {}, 1, value)]).splitlines()[0] == f"m {text} 1.000"


def test_label_values_are_escaped() -> None:
    line = render_openmetrics([Sample("m", {"l": 'a"b\\c\nd'}, 1, 0)]).splitlines()[0]
    assert line == 'm{l="a\\"b\\\\c\\nd"} 0.0 1.000'


def test_duplicate_timestamp_is_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate timestamp"):
        render_openmetrics([Sample("m", {}, 1, 0), Sample("m", {}, 1, 1)])


@pytest.mark.parametrize(
    ("name", "labels"), [("1bad", {}), ("ok", {"bad-label": "x"}), ("ok", {"__name__": "x"})]
)
def test_invalid_names_are_rejected(name: str, labels: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="invalid"):
        Sample(name, labels, 0, 0)
