"""The evidence chart posted with an idle alert: what the GPU did, against the rule.

Pure: an ``EvidenceChart`` in, PNG bytes out. It shows the GPU's activity (each series a
ratio 0..1, drawn as %), the rule's noise floor (dashed), its idle window (a grey band) and
when the pod got the GPU (a vertical marker), with times in UTC. ``plot_area`` gives the
geometry so a test can look up where a value was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from statistics import median

from guardian.engine.picture.canvas import Canvas, Colour
from guardian.engine.picture.font import HEIGHT, text_width

# Okabe-Ito: told apart by the common kinds of colour blindness.
SERIES_COLOURS: tuple[Colour, ...] = (
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
)
BACKGROUND: Colour = (255, 255, 255)
WINDOW_COLOUR: Colour = (232, 232, 232)
GRID_COLOUR: Colour = (210, 210, 210)
FLOOR_COLOUR: Colour = (170, 20, 20)
MARKER_COLOUR: Colour = (90, 90, 90)
AXIS_COLOUR: Colour = (40, 40, 40)
TEXT_COLOUR: Colour = (40, 40, 40)
NOTE_COLOUR: Colour = (110, 110, 110)

LEFT, RIGHT, TOP, BOTTOM = 40, 16, 30, 38  # margins: y labels, -, title, x labels + legend
GAP_FACTOR = 3  # a step over 3x the usual sampling step is missing data, not a slope
# Candidate x tick steps (s): each divides a day, so multiples of it fall on round clock times.
_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
_DAY = 86400


@dataclass(frozen=True, slots=True)
class Series:
    name: str  # legend text, e.g. "SM utilization"
    points: tuple[tuple[float, float], ...]  # (unix seconds, ratio); NaN values are gaps


@dataclass(frozen=True, slots=True)
class EvidenceChart:
    title: str
    start: float  # x range, unix seconds
    end: float
    series: tuple[Series, ...]
    floor: float | None = None  # dashed line, "floor 5%"
    window: tuple[float, float] | None = None  # grey band, "idle window"
    allocated_at: float | None = None  # vertical marker, drawn only inside the range
    y_max: float = 1.0

    def __post_init__(self) -> None:
        if not self.end > self.start:
            raise ValueError(f"end ({self.end}) must be after start ({self.start})")
        if not self.y_max > 0:
            raise ValueError(f"y_max must be positive, got {self.y_max}")


@dataclass(frozen=True, slots=True)
class Plot:
    """Where data goes: columns left..right and rows top..bottom, all included."""

    left: int
    top: int
    right: int
    bottom: int
    start: float
    end: float
    y_max: float

    def x_of(self, t: float) -> int:
        return self.left + round(
            (t - self.start) / (self.end - self.start) * (self.right - self.left)
        )

    def y_of(self, v: float) -> int:
        """The row of ``v``, clamped to 0..y_max (a value over the top is drawn at the top)."""
        v = min(max(v, 0.0), self.y_max)
        return self.bottom - round(v / self.y_max * (self.bottom - self.top))


def plot_area(chart: EvidenceChart, width: int = 720, height: int = 300) -> Plot:
    if width < LEFT + RIGHT + 20 or height < TOP + BOTTOM + 20:
        raise ValueError(f"{width}x{height} is too small for a chart")
    return Plot(LEFT, TOP, width - RIGHT, height - BOTTOM, chart.start, chart.end, chart.y_max)


def percent(v: float) -> str:
    """'5%', or '0.5%' where a whole number would hide the value (as the report writes it)."""
    pct = v * 100
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:.1f}%"


def render_png(chart: EvidenceChart, width: int = 720, height: int = 300) -> bytes:
    plot = plot_area(chart, width, height)
    canvas = Canvas(width, height, BACKGROUND)
    ticks, fmt = x_ticks(chart.start, chart.end, plot.right - plot.left)
    with canvas.clipped(plot.left, plot.top, plot.right, plot.bottom):
        _window(canvas, plot, chart.window)
        _grid(canvas, plot, ticks)
        if chart.floor is not None:
            canvas.dashed_hline(plot.left, plot.right, plot.y_of(chart.floor), FLOOR_COLOUR)
        if chart.allocated_at is not None and chart.start <= chart.allocated_at <= chart.end:
            x = plot.x_of(chart.allocated_at)
            canvas.vline(x, plot.top, plot.bottom, MARKER_COLOUR)
    # A 2-px line at 100% reaches one row above the plot; let it.
    with canvas.clipped(plot.left, plot.top - 1, plot.right, plot.bottom):
        drawn = [_series(canvas, plot, s, _colour(i)) for i, s in enumerate(chart.series)]
    _axes(canvas, plot, ticks, fmt)
    _notes(canvas, plot, chart)
    if not any(drawn):
        _centred_note(canvas, plot, "no samples in this range")
    _title(canvas, chart.title)
    _legend(canvas, plot, chart.series)
    return canvas.to_png()


def _colour(index: int) -> Colour:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def x_ticks(start: float, end: float, plot_w: int) -> tuple[list[float], str]:
    """Round UTC times to label, and their strftime format (seconds only for short ranges)."""
    span = end - start
    if span < 600:
        fmt, least = "%H:%M:%S", 1
    elif span < 2 * _DAY:
        fmt, least = "%H:%M", 60
    else:
        fmt, least = "%m-%d", _DAY
    label_w = text_width(datetime.fromtimestamp(start, tz=UTC).strftime(fmt))
    most = max(2, min(8, plot_w // (label_w + 24)))
    steps = [s for s in _STEPS if s >= least] + [_DAY * n for n in (1, 2, 7, 14, 28, 91, 365)]
    step = next((s for s in steps if span / s <= most), steps[-1])
    first = math.ceil(start / step) * step
    return [float(t) for t in range(first, math.floor(end) + 1, step)], fmt


def _window(canvas: Canvas, plot: Plot, window: tuple[float, float] | None) -> None:
    if window is None:
        return
    lo, hi = max(min(window), plot.start), min(max(window), plot.end)
    if lo < hi:
        canvas.rect(plot.x_of(lo), plot.top, plot.x_of(hi), plot.bottom, WINDOW_COLOUR)


def _grid(canvas: Canvas, plot: Plot, ticks: Sequence[float]) -> None:
    for quarter in (1, 2, 3, 4):  # 0% is the x axis itself
        canvas.hline(plot.left, plot.right, plot.y_of(plot.y_max * quarter / 4), GRID_COLOUR)
    for t in ticks:
        canvas.vline(plot.x_of(t), plot.top, plot.bottom, GRID_COLOUR)


def _runs(points: Sequence[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """Stretches to join: broken at NaN values and at steps over GAP_FACTOR x the median."""
    pts = sorted((p for p in points if math.isfinite(p[0])), key=lambda p: p[0])
    steps = [b[0] - a[0] for a, b in pairwise(pts) if b[0] > a[0]]
    limit = GAP_FACTOR * median(steps) if steps else math.inf
    runs: list[list[tuple[float, float]]] = [[]]
    prev = -math.inf
    for t, v in pts:
        if math.isnan(v) or t - prev > limit:
            runs.append([])
        if not math.isnan(v):
            runs[-1].append((t, v))
        prev = t
    return [r for r in runs if r]


def _segment(
    plot: Plot, a: tuple[float, float], b: tuple[float, float]
) -> tuple[int, int, int, int] | None:
    """``a``-``b`` cut to the x range (so a far-off point costs nothing), in pixels."""
    (t0, v0), (t1, v1) = a, b
    if t1 < plot.start or t0 > plot.end:
        return None
    # Clip values first, so a line towards an outlier keeps its slope in view.
    v0, v1 = min(max(v0, 0.0), plot.y_max), min(max(v1, 0.0), plot.y_max)
    if t0 < plot.start:
        v0 += (v1 - v0) * (plot.start - t0) / (t1 - t0)
        t0 = plot.start
    if t1 > plot.end:
        v1 = v0 + (v1 - v0) * (plot.end - t0) / (t1 - t0)
        t1 = plot.end
    return plot.x_of(t0), plot.y_of(v0), plot.x_of(t1), plot.y_of(v1)


def _series(canvas: Canvas, plot: Plot, series: Series, colour: Colour) -> bool:
    """Draw one series; whether it had any point to draw."""
    runs = _runs(series.points)
    for run in runs:
        if len(run) == 1:
            (t, v) = run[0]
            if plot.start <= t <= plot.end:
                x, y = plot.x_of(t), plot.y_of(v)
                canvas.rect(x - 1, y - 1, x + 1, y + 1, colour)
            continue
        for a, b in pairwise(run):
            seg = _segment(plot, a, b)
            if seg is not None:
                canvas.line(*seg, colour, thickness=2)
    return any(plot.start <= t <= plot.end for run in runs for t, _ in run)


def _axes(canvas: Canvas, plot: Plot, ticks: Sequence[float], fmt: str) -> None:
    # The axes sit just outside the data area, so a series at 0% is not hidden under them.
    canvas.vline(plot.left - 1, plot.top, plot.bottom + 1, AXIS_COLOUR)
    canvas.hline(plot.left - 1, plot.right, plot.bottom + 1, AXIS_COLOUR)
    for quarter in range(5):
        v = plot.y_max * quarter / 4
        label = percent(v)
        y = plot.y_of(v)
        canvas.hline(plot.left - 4, plot.left - 2, y, AXIS_COLOUR)
        canvas.text(plot.left - 6 - text_width(label), y - HEIGHT // 2, label, TEXT_COLOUR)
    for t in ticks:
        x = plot.x_of(t)
        label = datetime.fromtimestamp(t, tz=UTC).strftime(fmt)
        canvas.vline(x, plot.bottom + 2, plot.bottom + 4, AXIS_COLOUR)
        left = min(max(x - text_width(label) // 2, 0), canvas.width - text_width(label))
        canvas.text(left, plot.bottom + 7, label, TEXT_COLOUR)


def _notes(canvas: Canvas, plot: Plot, chart: EvidenceChart) -> None:
    """Name the floor, the window and the marker beside what they label, inside the plot."""
    if chart.floor is not None:
        label = f"floor {percent(chart.floor)}"
        y = plot.y_of(chart.floor)
        y = y - HEIGHT - 3 if y - HEIGHT - 3 >= plot.top else y + 4
        canvas.text(plot.right - 3 - text_width(label), y, label, FLOOR_COLOUR)
    if chart.window is not None:
        lo = max(min(chart.window), chart.start)
        if lo < min(max(chart.window), chart.end):
            canvas.text(plot.x_of(lo) + 3, plot.top + 3, "idle window", NOTE_COLOUR)
    at = chart.allocated_at
    if at is not None and chart.start <= at <= chart.end:
        x, label = plot.x_of(at), "allocated"
        fits = x + 3 + text_width(label) <= plot.right
        left = x + 3 if fits else x - 3 - text_width(label)
        canvas.text(left, plot.top + 14, label, MARKER_COLOUR)


def _centred_note(canvas: Canvas, plot: Plot, note: str) -> None:
    w = text_width(note)
    x = (plot.left + plot.right - w) // 2
    y = (plot.top + plot.bottom - HEIGHT) // 2
    canvas.rect(x - 4, y - 4, x + w + 3, y + HEIGHT + 3, BACKGROUND)  # clear of grid lines
    canvas.text(x, y, note, TEXT_COLOUR)


def _fit(text: str, room: int, scale: int) -> str:
    """``text``, cut with '...' to at most ``room`` pixels at ``scale``."""
    if text_width(text, scale) <= room:
        return text
    while text and text_width(text + "...", scale) > room:
        text = text[:-1]
    return text + "..."


def _title(canvas: Canvas, title: str) -> None:
    room = canvas.width - 16
    scale = 2 if text_width(title, 2) <= room else 1  # small print beats a cut title
    canvas.text(8, 8 if scale == 2 else 12, _fit(title, room, scale), TEXT_COLOUR, scale)


def _legend(canvas: Canvas, plot: Plot, series: Sequence[Series]) -> None:
    y = plot.bottom + 22
    note = "times in UTC"
    end = canvas.width - RIGHT - text_width(note)
    canvas.text(end, y, note, NOTE_COLOUR)
    x = plot.left
    for i, s in enumerate(series):
        room = end - 16 - (x + 16)
        if room < text_width("x..."):
            break
        canvas.rect(x, y + 2, x + 11, y + 4, _colour(i))
        name = _fit(s.name, room, 1)
        canvas.text(x + 16, y, name, TEXT_COLOUR)
        x += 16 + text_width(name) + 16
