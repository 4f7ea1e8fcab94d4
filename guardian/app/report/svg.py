"""Stacked bar charts drawn as inline SVG: no plotting library, no script, no network.

A report has a handful of charts of one kind (a value per day, stacked by key), so they
are drawn here rather than by a charting library whose JavaScript would be most of the
file (plotly.js alone is 4.8 MB). Each bar segment carries a ``<title>``: the browser
shows its key, day and value on hover. Keys past ``MAX_KEYS`` are summed as "other".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = (  # plotly's default colours, which the report used before
    "#636efa",
    "#EF553B",
    "#00cc96",
    "#ab63fa",
    "#FFA15A",
    "#19d3f3",
    "#FF6692",
    "#B6E880",
    "#FF97FF",
    "#FECB52",
)
MAX_KEYS = len(PALETTE)
WIDTH, HEIGHT = 960, 340
LEFT, RIGHT, TOP, BOTTOM = 80, 220, 20, 50  # margins: axis labels, legend, x labels


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float]  # one per day


@dataclass(frozen=True)
class Chart:
    chart_id: str
    title: str
    y_title: str
    days: Sequence[str]
    series: Sequence[Series]
    fmt: Callable[[float], str] = lambda v: f"{v:,.1f}"


def capped(series: Sequence[Series]) -> list[Series]:
    """At most ``MAX_KEYS`` series: the first ones (the caller's order), the rest summed."""
    if len(series) <= MAX_KEYS:
        return list(series)
    rest = series[MAX_KEYS - 1 :]
    other = [sum(s.values[i] for s in rest) for i in range(len(series[0].values))]
    return [*series[: MAX_KEYS - 1], Series(f"other ({len(rest)})", other)]


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``: steps of 1, 2 or 5 times a power of 10."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _axes(chart: Chart, ticks: list[float], plot_w: float, plot_h: float) -> list[str]:
    y0 = TOP + plot_h
    out = []
    for tick in ticks:
        y = y0 - plot_h * tick / ticks[-1]
        label = escape(chart.fmt(tick))
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#e5e5e5"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>'
        )
    band = plot_w / max(len(chart.days), 1)
    every = max(1, math.ceil(len(chart.days) / 12))
    for i, day in enumerate(chart.days):
        if i % every == 0:
            x = LEFT + band * (i + 0.5)
            out.append(
                f'<text x="{x:.1f}" y="{y0 + 16}" text-anchor="middle">{escape(day[5:])}</text>'
            )
    out.append(
        f'<text x="16" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2:.1f})">{escape(chart.y_title)}</text>'
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">day (UTC)</text>'
    )
    return out


def _bars(chart: Chart, series: list[Series], scale: float, plot_w: float) -> list[str]:
    band = plot_w / max(len(chart.days), 1)
    width = band * 0.8
    out = []
    for i, day in enumerate(chart.days):
        base = float(HEIGHT - BOTTOM)
        for colour, s in zip(PALETTE, series, strict=False):
            value = s.values[i]
            if value <= 0:
                continue
            h = value * scale
            base -= h
            tip = f"{s.name}, {day}: {chart.fmt(value)}"
            out.append(
                f'<rect class="bar" x="{LEFT + band * i + band * 0.1:.1f}" y="{base:.1f}" '
                f'width="{width:.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    return out


def _legend(series: list[Series]) -> list[str]:
    x = WIDTH - RIGHT + 20
    out = []
    for i, (colour, s) in enumerate(zip(PALETTE, series, strict=False)):
        y = TOP + 10 + 20 * i
        name = s.name if len(s.name) <= 26 else s.name[:25] + "…"
        out.append(
            f'<rect x="{x}" y="{y - 9}" width="12" height="12" fill="{colour}"/>'
            f'<text class="legendtext" x="{x + 18}" y="{y + 1}">{escape(name)}</text>'
        )
    return out


def stacked_bars(chart: Chart) -> str:
    """One chart: a title and an SVG of the series stacked per day, with a legend."""
    series = capped(chart.series)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    tops = [sum(max(s.values[i], 0.0) for s in series) for i in range(len(chart.days))]
    ticks = nice_ticks(max(tops, default=0.0))
    parts = [
        *_axes(chart, ticks, plot_w, plot_h),
        *_bars(chart, series, plot_h / ticks[-1], plot_w),
        *_legend(series),
    ]
    return (
        f'<figure class="chart" id="{escape(chart.chart_id)}">'
        f"<figcaption>{escape(chart.title)}</figcaption>"
        f'<svg class="main-svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(chart.title)}">'
        f"{''.join(parts)}</svg></figure>"
    )
