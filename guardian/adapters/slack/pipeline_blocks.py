"""What a pipeline alert's message shows in place of a workload's.

A pipeline alert (``guardian_class: pipeline``: an exporter down, gaps in the metrics, a
failing rule group, remote write behind) has no workload, GPU or cost behind it. Its
header names the problem and the affected thing, its fields say what is affected (node,
scrape target, rule group, remote-write queue, as its labels have them), and once
resolved its header and thread reply say what recovered and after how long. The words
come from ``guardian.engine.notify.pipeline``; the callers escape them.
"""

from __future__ import annotations

from guardian.engine.notify.pipeline import describe
from guardian.engine.notify.pipeline import is_pipeline as is_pipeline
from guardian.model.notifications import Finding
from guardian_common.durations import format_duration


def title(f: Finding) -> str:
    """The problem and the affected thing; once resolved, what recovered and after how long."""
    text = describe(f.labels, f.alertname)
    if f.resolved_at is not None:
        return text.recovered_after(f.resolved_at - f.active_at)
    return text.title


def fields(f: Finding, now: float) -> list[tuple[str, str | None]]:
    """Cluster, what is affected, the alert and its reason, and how long it has lasted."""
    end = f.resolved_at if f.resolved_at is not None else now
    lasted = format_duration(max(0.0, round(end - f.active_at)))
    return [
        ("Cluster", f.cluster),
        ("Affected", "\n".join(describe(f.labels, f.alertname).affected)),
        ("Alert", f.alertname),
        ("Reason", f.labels.get("reason")),
        ("Lasted" if f.resolved_at is not None else "Ongoing for", lasted),
    ]


def lead(f: Finding) -> str:
    """The summary and the description, which names the node, target or group."""
    return "\n".join(p for p in (f.summary, f.description) if p) or f.alertname


def where(f: Finding) -> str:
    """The affected thing's shortest name (``node gn2``); empty when the labels name none."""
    return describe(f.labels, f.alertname).where


def subject(f: Finding) -> str:
    """The affected thing's shortest name, else the alert's name."""
    return where(f) or f.alertname


def fallback(f: Finding, status: str) -> str:
    """The plain-text fallback: the alert, then the title; the summary while it fires."""
    text = f"[{status}] {f.severity} {f.alertname}: {title(f)}"
    if f.summary and f.resolved_at is None:
        text += f" - {f.summary}"
    return text
