"""The report as one self-contained HTML file: plotly.js inlined, no network to open it.

Three plots per report: idle GPU-hours per day and their cost per day, one trace per key
of the chosen dimension (plus the total cost), and the idle GPU-hours per day split into
those in fully idle and those in partly idle workloads; then the summary table. Plotly
draws SVG, so the file also prints and opens in any browser without a GPU.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
import plotly.io as pio

from guardian.app.report.formats import SPLIT_MEANING, header_line, money
from guardian.app.report.gpu_hours import ReportResult
from guardian.engine.report.chargeback import Summary, summarize, total

PLOT_IDS = ("idle-gpu-hours", "cost", "idle-split")


def _figure(title: str, y_title: str, traces: list[go.Scatter | go.Bar]) -> go.Figure:
    figure = go.Figure(traces)
    figure.update_layout(
        title=title,
        xaxis_title="day (UTC)",
        yaxis_title=y_title,
        barmode="stack",
        template="plotly_white",
        height=420,
        legend_title_text="",
    )
    return figure


def _table(summaries: list[Summary], everything: Summary, by: str, currency: str) -> str:
    head = ["", "allocated GPU-h", "used GPU-h", "idle GPU-h", "fully idle", "partly idle"]
    head += ["utilization", "cost", "idle cost"]
    rows = []
    for s in [*summaries, everything]:
        util = "-" if s.utilization is None else f"{s.utilization:.0%}"
        cells = [
            s.key,
            f"{s.allocated:.1f}",
            f"{s.used:.1f}",
            f"{s.idle:.1f}",
            f"{s.idle_fully:.1f}",
            f"{s.idle_partly:.1f}",
            util,
            money(s.cost, currency),
            money(s.idle_cost, currency),
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    head[0] = by
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _split_figure(everything: Summary, days: list[str]) -> go.Figure:
    """Idle GPU-hours per day (all keys): in fully idle and in partly idle workloads."""
    traces: list[go.Scatter | go.Bar] = [
        go.Bar(name=f"in {how} idle workloads", x=days, y=[everything.daily[d][key] for d in days])
        for how, key in (("fully", "idle_fully"), ("partly", "idle_partly"))
    ]
    title = "Idle GPU-hours per day, in fully and in partly idle workloads"
    return _figure(title, "idle GPU-hours", traces)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tbody tr:last-child { font-weight: bold; }
"""


def render_html(result: ReportResult, by: str) -> str:
    summaries = summarize(result.rows, by, result.days)
    everything = total(result.rows, result.days)
    days = result.days
    idle = _figure(
        f"Idle GPU-hours per day, by {by}",
        "idle GPU-hours",
        [go.Bar(name=s.key, x=days, y=[s.daily[d]["idle"] for d in days]) for s in summaries],
    )
    cost_traces: list[go.Scatter | go.Bar] = [
        go.Scatter(
            name=s.key, x=days, y=[s.daily[d]["idle_cost"] for d in days], mode="lines+markers"
        )
        for s in summaries
    ]
    cost_traces.append(
        go.Scatter(
            name="total cost",
            x=days,
            y=[everything.daily[d]["cost"] for d in days],
            mode="lines",
            line={"dash": "dot", "color": "#444"},
        )
    )
    cost = _figure(
        f"Cost of idle GPU-hours per day, by {by} ({result.currency})", "cost", cost_traces
    )
    split = _split_figure(everything, days)
    # The first plot carries plotly.js inline; the others reuse it.
    plots = [
        pio.to_html(idle, include_plotlyjs=True, full_html=False, div_id=PLOT_IDS[0]),
        pio.to_html(cost, include_plotlyjs=False, full_html=False, div_id=PLOT_IDS[1]),
        pio.to_html(split, include_plotlyjs=False, full_html=False, div_id=PLOT_IDS[2]),
    ]
    title = html.escape(header_line(result))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>GPU Guardian report</title><style>{STYLE}</style></head><body>"
        f"<h1>GPU Guardian: GPU usage and cost</h1><p>{title}</p>"
        f"{''.join(plots)}"
        f"<h2>By {html.escape(by)}</h2>{_table(summaries, everything, by, result.currency)}"
        f"<p>fully idle: {html.escape(SPLIT_MEANING[0])}<br>"
        f"partly idle: {html.escape(SPLIT_MEANING[1])}</p>"
        "</body></html>\n"
    )
