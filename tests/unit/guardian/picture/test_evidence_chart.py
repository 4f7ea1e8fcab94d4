"""The evidence chart: each mark is drawn where the data says (checked on the decoded PNG)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable

import pytest

from guardian.engine.picture.evidence_chart import (
    BACKGROUND,
    FLOOR_COLOUR,
    MARKER_COLOUR,
    SERIES_COLOURS,
    WINDOW_COLOUR,
    EvidenceChart,
    Plot,
    Series,
    percent,
    plot_area,
    render_png,
    x_ticks,
)
from guardian.engine.picture.png import decode_png

Colour = tuple[int, int, int]
START = 1_700_000_400.0  # a multiple of 600 s, so the x ticks fall on START + k * 600
HOUR = 3600.0
BLUE, ORANGE = SERIES_COLOURS[0], SERIES_COLOURS[1]


class Picture:
    def __init__(self, png: bytes) -> None:
        self.width, self.height, self.rgb = decode_png(png)

    def at(self, x: int, y: int) -> Colour:
        i = (y * self.width + x) * 3
        return self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]

    def near(self, x: int, y: int, colour: Colour, reach: int = 2) -> bool:
        return any(
            self.at(x + dx, y + dy) == colour
            for dx in range(-reach, reach + 1)
            for dy in range(-reach, reach + 1)
        )

    def count(self, colour: Colour, xs: Iterable[int], ys: Iterable[int]) -> int:
        ys = list(ys)
        return sum(self.at(x, y) == colour for x in xs for y in ys)


def _series(
    name: str, value: float | Callable[[float], float], step: float = 30.0, span: float = HOUR
) -> Series:
    """Points every ``step`` s from START; ``value`` is a number or a function of the offset."""
    n = int(span / step) + 1
    offsets = [i * step for i in range(n)]
    values = [value(t) if callable(value) else value for t in offsets]
    return Series(name, tuple((START + t, v) for t, v in zip(offsets, values, strict=True)))


STEP_UP = _series("SM utilization", lambda t: 0.0 if t < HOUR / 2 else 0.8)
FULL = EvidenceChart(
    title="GPU 0 idle: ml/trainer",
    start=START,
    end=START + HOUR,
    series=(STEP_UP, _series("memory bandwidth", 0.4)),
    floor=0.05,
    window=(START + 2000, START + 3000),
    allocated_at=START + 300,
)


@pytest.fixture(scope="module")
def full() -> tuple[Picture, Plot]:
    return Picture(render_png(FULL)), plot_area(FULL)


def test_renders_a_png_of_the_requested_size() -> None:
    picture = Picture(render_png(FULL, width=640, height=240))
    assert (picture.width, picture.height) == (640, 240)


@pytest.mark.parametrize(("t", "level", "other"), [(900, 0.0, 0.8), (2700, 0.8, 0.0)])
def test_series_is_drawn_at_its_value(
    full: tuple[Picture, Plot], t: float, level: float, other: float
) -> None:
    picture, plot = full
    x = plot.x_of(START + t)
    assert picture.near(x, plot.y_of(level), BLUE)
    assert not picture.near(x, plot.y_of(other), BLUE)


@pytest.mark.parametrize(("t", "level"), [(900, 0.0), (2700, 0.8)])
def test_series_line_is_two_pixels_thick_even_at_zero(
    full: tuple[Picture, Plot], t: float, level: float
) -> None:
    picture, plot = full
    x, y = plot.x_of(START + t), plot.y_of(level)
    column = [row for row in range(picture.height) if picture.at(x, row) == BLUE]
    assert column == [y - 1, y]


def test_two_series_get_two_colours(full: tuple[Picture, Plot]) -> None:
    picture, plot = full
    x = plot.x_of(START + 900)
    assert picture.near(x, plot.y_of(0.4), ORANGE)
    assert not picture.near(x, plot.y_of(0.4), BLUE)
    assert not picture.near(x, plot.y_of(0.0), ORANGE)


def test_floor_is_a_dashed_line_at_its_value(full: tuple[Picture, Plot]) -> None:
    picture, plot = full
    row = [picture.at(x, plot.y_of(0.05)) for x in range(plot.left, plot.right + 1)]
    share = row.count(FLOOR_COLOUR) / len(row)
    assert 0.4 < share < 0.8  # dashes, not a solid line
    assert picture.count(FLOOR_COLOUR, range(plot.left, plot.right), [plot.y_of(0.3)]) == 0


def test_window_band_is_shaded_inside_the_window_only(full: tuple[Picture, Plot]) -> None:
    picture, plot = full
    y = plot.y_of(0.6)  # no grid line, series or label on this row
    for t in (2100, 2500, 2900):
        assert picture.at(plot.x_of(START + t), y) == WINDOW_COLOUR
    for t in (1500, 1900, 3100, 3300):
        assert picture.at(plot.x_of(START + t), y) == BACKGROUND


def test_allocation_marker_is_a_vertical_line_at_its_time(full: tuple[Picture, Plot]) -> None:
    picture, plot = full
    x = plot.x_of(START + 300)
    for v in (0.2, 0.6, 0.9):
        assert picture.at(x, plot.y_of(v)) == MARKER_COLOUR
        assert picture.at(x + 3, plot.y_of(v)) == BACKGROUND


def test_allocation_outside_the_range_is_not_drawn() -> None:
    chart = EvidenceChart("t", START, START + HOUR, (), allocated_at=START - 60)
    picture = Picture(render_png(chart))
    assert picture.count(MARKER_COLOUR, range(picture.width), range(picture.height)) == 0


def test_nan_breaks_the_line() -> None:
    gap = _series("SM", lambda t: math.nan if 600 <= t < 900 else 0.5, step=60)
    chart = EvidenceChart("gap", START, START + HOUR, (gap,))
    picture, plot = Picture(render_png(chart)), plot_area(chart)
    y = plot.y_of(0.5)
    assert picture.near(plot.x_of(START + 300), y, BLUE)
    assert picture.near(plot.x_of(START + 1200), y, BLUE)
    between = range(plot.x_of(START + 540) + 2, plot.x_of(START + 900) - 1)
    assert len(between) > 10
    assert picture.count(BLUE, between, range(y - 3, y + 4)) == 0


def test_a_long_step_breaks_the_line_and_a_lone_point_is_a_dot() -> None:
    points = [(START + t, 0.5) for t in range(0, 600, 60)]
    points += [(START + 1200, 0.5)]  # alone: 600 s from both neighbours, 10x the step
    points += [(START + t, 0.5) for t in range(1800, 3600, 60)]
    chart = EvidenceChart("gap", START, START + HOUR, (Series("SM", tuple(points)),))
    picture, plot = Picture(render_png(chart)), plot_area(chart)
    y = plot.y_of(0.5)
    dot = plot.x_of(START + 1200)
    assert picture.at(dot, y) == BLUE
    assert picture.count(BLUE, range(plot.x_of(START + 540) + 2, dot - 2), [y - 1, y, y + 1]) == 0
    assert picture.count(BLUE, range(dot + 2, plot.x_of(START + 1800) - 1), [y, y + 1]) == 0


def test_values_over_the_top_are_clipped_at_the_top() -> None:
    chart = EvidenceChart("clip", START, START + HOUR, (_series("SM", 1.7),))
    picture, plot = Picture(render_png(chart)), plot_area(chart)
    assert picture.near(plot.x_of(START + 900), plot.top, BLUE, reach=1)
    assert plot.y_of(1.7) == plot.top


@pytest.mark.parametrize(
    "series", [(), (Series("SM", ()),), (Series("SM", ((START + 60, math.nan),)),)]
)
def test_no_samples_still_renders_a_valid_png(series: tuple[Series, ...]) -> None:
    chart = EvidenceChart("no data", START, START + HOUR, series, floor=0.05)
    picture, plot = Picture(render_png(chart, 500, 200)), plot_area(chart, 500, 200)
    assert (picture.width, picture.height) == (500, 200)
    data_area = range(plot.top - 1, plot.bottom + 1)
    assert picture.count(BLUE, range(plot.left, plot.right + 1), data_area) == 0
    middle = range((plot.top + plot.bottom) // 2 - 4, (plot.top + plot.bottom) // 2 + 4)
    inked = picture.count(BACKGROUND, range(plot.left, plot.right), middle)
    assert inked < (plot.right - plot.left) * len(middle) - 200  # the note's letters


def test_png_stays_small_for_three_busy_series() -> None:
    rng = random.Random(3)  # noqa: S311 (test data)
    series = tuple(
        Series(f"s{k}", tuple((START + i * 18, rng.random()) for i in range(200))) for k in range(3)
    )
    chart = EvidenceChart("busy", START, START + HOUR, series, 0.05, (START, START + 900), START)
    assert len(render_png(chart)) < 60_000


def test_x_ticks_are_round_utc_times() -> None:
    ticks, fmt = x_ticks(START + 10, START + HOUR, 664)
    assert fmt == "%H:%M"
    assert all(t % 600 == 0 for t in ticks)
    assert 4 <= len(ticks) <= 8
    ticks, fmt = x_ticks(START, START + 300, 664)
    assert fmt == "%H:%M:%S"
    assert ticks == [START + 60 * k for k in range(6)]


def test_percent_labels() -> None:
    assert [percent(v) for v in (0.0, 0.05, 0.25, 1.0, 0.005)] == [
        "0%",
        "5%",
        "25%",
        "100%",
        "0.5%",
    ]


def test_chart_refuses_an_empty_range() -> None:
    with pytest.raises(ValueError, match="after start"):
        EvidenceChart("t", START, START, ())
