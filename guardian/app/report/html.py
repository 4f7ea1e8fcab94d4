"""The report as one self-contained HTML page: no script or style from elsewhere, no network.

First the headline (idle cost, the share of spend idle, the top idle workloads), then four
charts drawn as inline SVG (``svg.py``): idle cost, all spend, idle GPU-hours per day by
key, and the idle GPU-hours split into fully and partly idle workloads; then one row per
workload (sortable: click a column), most idle cost first, and the summary by key. The
page is tens of kilobytes, prints, and opens in any browser without a GPU.
"""

from __future__ import annotations

import html

from guardian.app.report.formats import SPLIT_MEANING, header_line, money, pct
from guardian.app.report.gpu_hours import ReportResult
from guardian.app.report.svg import Chart, Series, stacked_bars
from guardian.engine.report.chargeback import Summary, summarize
from guardian.engine.report.headline import Headline, WorkloadLine, headline, workload_lines
from guardian_common.words import amount

PLOT_IDS = ("idle-cost", "spend", "idle-gpu-hours", "idle-split")
HOURS_COLUMNS = ("allocated GPU-h", "idle GPU-h", "fully idle", "partly idle")


def _cell(text: str, value: float | None = None) -> str:
    if value is None and text == "n/a":
        return '<td data-v="">n/a</td>'
    attr = "" if value is None else f' data-v="{value:.6f}"'
    return f"<td{attr}>{html.escape(text)}</td>"


def _workload_row(names: tuple[str, str], s: Summary, share: float | None, currency: str) -> str:
    cells = [
        *(_cell(name) for name in names),
        *(_cell(f"{v:.1f}", v) for v in (s.allocated, s.idle, s.idle_fully, s.idle_partly)),
        _cell(money(s.idle_cost, currency), s.idle_cost),
        _cell(pct(share), share),
        _cell(money(s.cost, currency), s.cost),
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _workload_table(lines: list[WorkloadLine], everything: Summary, currency: str) -> str:
    head = ["namespace", "workload", *HOURS_COLUMNS, "idle cost", "share idle", "cost"]
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        _workload_row((line.namespace or "(none)", line.workload or "(none)"),
                      line.summary, line.share_idle, currency)
        for line in lines
    )  # fmt: skip
    share = everything.idle / everything.allocated if everything.allocated else None
    foot = _workload_row(("total", ""), everything, share, currency)
    return (
        f'<table id="workloads" class="sortable"><thead><tr>{header}</tr></thead>'
        f"<tbody>{body}</tbody><tfoot>{foot}</tfoot></table>"
    )


def _summary_table(summaries: list[Summary], everything: Summary, by: str, currency: str) -> str:
    head = [by, "allocated GPU-h", "used GPU-h", "idle GPU-h", "fully idle", "partly idle"]
    head += ["utilization", "cost", "idle cost"]
    rows = []
    for s in [*summaries, everything]:
        cells = [f"{v:.1f}" for v in (s.allocated, s.used, s.idle, s.idle_fully, s.idle_partly)]
        cells = [s.key, *cells, pct(s.utilization, 0)]
        cells += [money(s.cost, currency), money(s.idle_cost, currency)]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body, foot = "".join(rows[:-1]), rows[-1]
    return (
        f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody><tfoot>{foot}</tfoot></table>"
    )


def _headline(top: Headline, currency: str) -> str:
    t = top.total
    figures = [
        ("headline-idle-cost", "idle cost", money(t.idle_cost, currency)),
        ("headline-share-idle", "share of spend idle", pct(top.share_of_spend_idle)),
        ("headline-cost", "all GPU spend", money(t.cost, currency)),
        ("headline-idle-hours", "idle GPU-hours", f"{amount(t.idle)} of {amount(t.allocated)}"),
    ]
    cards = "".join(
        f'<div class="figure"><div class="label">{html.escape(label)}</div>'
        f'<div class="value" id="{key}">{html.escape(value)}</div></div>'
        for key, label, value in figures
    )
    items = "".join(
        f"<li><b>{html.escape(w.name)}</b>: {html.escape(money(w.summary.idle_cost, currency))}"
        f" idle ({amount(w.summary.idle)} idle GPU-hours,"
        f" {pct(w.share_idle)} of its GPU-hours)</li>"
        for w in top.top
    )
    top_list = f'<ol id="headline-top">{items}</ol>' if items else "<p>No idle GPU-hours.</p>"
    return (
        f'<section id="headline"><div class="figures">{cards}</div>'
        f"<h2>Top idle workloads</h2>{top_list}</section>"
    )


def _charts(result: ReportResult, by: str, summaries: list[Summary], everything: Summary) -> str:
    days, cur = result.days, result.currency

    def per_key(metric: str) -> list[Series]:
        return [Series(s.key, [s.daily[d][metric] or 0.0 for d in days]) for s in summaries]

    def cash(v: float) -> str:
        return money(v, cur)

    split = [
        Series(f"in {how} idle workloads", [everything.daily[d][key] or 0.0 for d in days])
        for how, key in (("fully", "idle_fully"), ("partly", "idle_partly"))
    ]
    charts = [
        Chart(PLOT_IDS[0], f"Idle cost per day, by {by} ({cur})", "idle cost", days,
              per_key("idle_cost"), cash),
        Chart(PLOT_IDS[1], f"All GPU spend per day, by {by} ({cur})", "cost", days,
              per_key("cost"), cash),
        Chart(PLOT_IDS[2], f"Idle GPU-hours per day, by {by}", "idle GPU-hours", days,
              per_key("idle")),
        Chart(PLOT_IDS[3], "Idle GPU-hours per day, in fully and in partly idle workloads",
              "idle GPU-hours", days, split),
    ]  # fmt: skip
    return "".join(stacked_bars(c) for c in charts)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1000px; }
.figures { display: flex; gap: 1.5em; flex-wrap: wrap; }
.figure { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em 1em; min-width: 10em; }
.figure .label { color: #666; font-size: 0.9em; }
.figure .value { font-size: 1.8em; font-weight: 600; }
figure.chart { margin: 1.5em 0; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
svg text { font-size: 12px; fill: #444; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: right; }
th { white-space: nowrap; }
th:first-child, td:first-child, #workloads td:nth-child(2), #workloads th:nth-child(2) {
  text-align: left; }
tfoot td { font-weight: bold; }
table.sortable th { cursor: pointer; }
table.sortable th[data-dir="asc"]::after { content: " ▲"; }
table.sortable th[data-dir="desc"]::after { content: " ▼"; }
"""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var dir = th.dataset.dir === "desc" ? "asc" : "desc";
    th.parentNode.querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
    th.dataset.dir = dir;
    function key(row) {
      var c = row.cells[i], v = c.dataset.v;
      return v === undefined ? c.textContent : (v === "" ? -Infinity : parseFloat(v));
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var p = key(a), q = key(b);
      var o = typeof p === "number" ? (p < q ? -1 : p > q ? 1 : 0) : p.localeCompare(q);
      return dir === "asc" ? o : -o;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def render_html(result: ReportResult, by: str) -> str:
    summaries = summarize(result.rows, by, result.days)
    top = headline(result.rows, result.days)
    everything, cur = top.total, result.currency
    lines = workload_lines(result.rows, result.days)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>GPU Guardian report</title><style>{STYLE}</style></head><body>"
        f"<h1>GPU Guardian: idle GPU cost</h1><p>{html.escape(header_line(result))}</p>"
        f"{_headline(top, cur)}"
        f"{_charts(result, by, summaries, everything)}"
        "<h2>Per workload</h2><p>Most idle cost first; click a column to sort.</p>"
        f"{_workload_table(lines, everything, cur)}"
        f"<h2>By {html.escape(by)}</h2>{_summary_table(summaries, everything, by, cur)}"
        f"<p>fully idle: {html.escape(SPLIT_MEANING[0])}<br>"
        f"partly idle: {html.escape(SPLIT_MEANING[1])}<br>"
        "share idle: idle GPU-hours over allocated GPU-hours</p>"
        f"<script>{SORT_SCRIPT}</script></body></html>\n"
    )
