"""The report as a terminal table, CSV (one row per day and key) and JSON.

Idle GPU-hours come whole and split in two: in fully idle workloads (all of the
workload's GPUs idle at the time: a reclaim frees them) and in partly idle ones (some of
its GPUs busy or unknown at the time: only a right-size would free them)."""

from __future__ import annotations

import csv
import dataclasses
import io
from typing import Any

from guardian.app.report.gpu_hours import ReportResult
from guardian.engine.report.chargeback import Summary, summarize, total
from guardian.engine.report.headline import Headline, WorkloadLine, headline, workload_lines
from guardian.model.times import rfc3339
from guardian_common.durations import format_duration
from guardian_common.words import amount

CSV_FIELDS = (
    "day",
    "cluster",
    "gpu_group",
    "namespace",
    "workload",
    "model",
    "allocated_gpu_hours",
    "used_gpu_hours",
    "idle_gpu_hours",
    "idle_gpu_hours_fully_idle",
    "idle_gpu_hours_partly_idle",
    "cost",
    "idle_cost",
    "currency",
)


def money(amount: float | None, currency: str) -> str:
    return "n/a" if amount is None else f"{currency}{amount:,.2f}"


def pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    return [line.rstrip() for line in lines]


SPLIT = ("FULLY IDLE", "PARTLY IDLE")
SPLIT_MEANING = (  # what each of SPLIT counts
    "idle GPU-hours in workloads all of whose GPUs were idle at the time (a reclaim frees them)",
    (
        "idle GPU-hours in workloads that also held a busy GPU, or one without utilization, "
        "at the time (only a right-size frees them)"
    ),
)


def header_line(result: ReportResult) -> str:
    return (
        f"GPU usage {rfc3339(result.since)} to {rfc3339(result.until)} "
        f"({result.metrics} metrics, a point every {format_duration(result.resolution)}, "
        f"idle under {result.floor:.0%} utilization)"
    )


def top_line(line: WorkloadLine, currency: str) -> str:
    s = line.summary
    return (
        f"{line.name}: {money(s.idle_cost, currency)} idle "
        f"({amount(s.idle)} idle GPU-hours, {pct(line.share_idle)} of its GPU-hours)"
    )


def headline_lines(top: Headline, currency: str) -> list[str]:
    """The headline: idle cost, the share of spend idle, the top idle workloads."""
    t = top.total
    spend = f"{money(t.idle_cost, currency)} of {money(t.cost, currency)} GPU spend"
    hours = f"{amount(t.idle)} of {amount(t.allocated)} allocated"
    lines = [
        f"idle cost: {spend} ({pct(top.share_of_spend_idle)} of spend idle)",
        f"idle GPU-hours: {hours} ({pct(top.share_of_hours_idle)})",
    ]
    if top.top:
        lines.append("top idle workloads:")
        lines += [f"  {i}. {top_line(w, currency)}" for i, w in enumerate(top.top, 1)]
    return lines


def render_table(result: ReportResult, by: str) -> str:
    cur = result.currency
    summaries = summarize(result.rows, by, result.days)
    everything = total(result.rows, result.days)

    def row(s: Summary) -> list[str]:
        return [
            s.key,
            f"{s.allocated:.1f}",
            f"{s.used:.1f}",
            f"{s.idle:.1f}",
            f"{s.idle_fully:.1f}",
            f"{s.idle_partly:.1f}",
            pct(s.utilization, 0).replace("n/a", "-"),
            money(s.cost, cur),
            money(s.idle_cost, cur),
        ]

    lines = [header_line(result), ""]
    lines += [*headline_lines(headline(result.rows, result.days), cur), ""]
    head = [by.upper(), "ALLOCATED GPU-h", "USED GPU-h", "IDLE GPU-h", *SPLIT, "UTIL", "COST"]
    lines += _table([*head, "IDLE COST"], [row(s) for s in summaries] + [row(everything)])
    lines += ["", "per day (all keys):"]
    daily = [
        [
            day,
            f"{v['allocated'] or 0.0:.1f}",
            f"{v['idle'] or 0.0:.1f}",
            f"{v['idle_fully'] or 0.0:.1f}",
            f"{v['idle_partly'] or 0.0:.1f}",
            money(v["cost"], cur),
            money(v["idle_cost"], cur),
        ]
        for day, v in everything.daily.items()
    ]
    head = ["DAY", "ALLOCATED GPU-h", "IDLE GPU-h", *SPLIT, "COST", "IDLE COST"]
    lines += _table(head, daily)
    lines += [
        "",
        *(f"{name}: {meaning}" for name, meaning in zip(SPLIT, SPLIT_MEANING, strict=True)),
    ]
    return "\n".join(lines) + "\n"


def render_csv(result: ReportResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for r in result.rows:
        writer.writerow(
            [
                r.day,
                r.cluster,
                r.gpu_group,
                r.namespace,
                r.workload,
                r.model,
                f"{r.allocated:.6f}",
                f"{r.used:.6f}",
                f"{r.idle:.6f}",
                f"{r.idle_fully:.6f}",
                f"{r.idle_partly:.6f}",
                "" if r.cost is None else f"{r.cost:.6f}",
                "" if r.idle_cost is None else f"{r.idle_cost:.6f}",
                result.currency,
            ]
        )
    return out.getvalue()


def _summary_json(s: Summary) -> dict[str, Any]:
    return {
        "key": s.key,
        "allocated_gpu_hours": s.allocated,
        "used_gpu_hours": s.used,
        "idle_gpu_hours": s.idle,
        "idle_gpu_hours_fully_idle": s.idle_fully,
        "idle_gpu_hours_partly_idle": s.idle_partly,
        "utilization": s.utilization,
        "cost": s.cost,
        "idle_cost": s.idle_cost,
        "daily": [{"day": day, **values} for day, values in s.daily.items()],
    }


def _workload_json(line: WorkloadLine) -> dict[str, Any]:
    s = line.summary
    return {
        "namespace": line.namespace,
        "workload": line.workload,
        "allocated_gpu_hours": s.allocated,
        "idle_gpu_hours": s.idle,
        "idle_gpu_hours_fully_idle": s.idle_fully,
        "idle_gpu_hours_partly_idle": s.idle_partly,
        "idle_cost": s.idle_cost,
        "cost": s.cost,
        "share_idle": line.share_idle,
    }


def _headline_json(result: ReportResult) -> dict[str, Any]:
    top = headline(result.rows, result.days)
    return {
        "idle_cost": top.total.idle_cost,
        "cost": top.total.cost,
        "share_of_spend_idle": top.share_of_spend_idle,
        "idle_gpu_hours": top.total.idle,
        "allocated_gpu_hours": top.total.allocated,
        "top_idle_workloads": [_workload_json(w) for w in top.top],
    }


def render_json(result: ReportResult, by: str) -> dict[str, Any]:
    return {
        "since": rfc3339(result.since),
        "until": rfc3339(result.until),
        "metrics": result.metrics,
        "resolution_seconds": result.resolution,
        "idle_floor": result.floor,
        "currency": result.currency,
        "by": by,
        "days": result.days,
        "headline": _headline_json(result),
        "total": _summary_json(total(result.rows, result.days)),
        "groups": [_summary_json(s) for s in summarize(result.rows, by, result.days)],
        "workloads": [_workload_json(w) for w in workload_lines(result.rows, result.days)],
        "rows": [dataclasses.asdict(r) for r in result.rows],
    }
