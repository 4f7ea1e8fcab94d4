"""What finance reads first: the idle cost, the share of spend idle, the top idle workloads,
and one line per workload (namespace and workload), most idle cost first.

Pure: from the rows ``chargeback.usage_rows`` makes. The share of spend idle is the idle
cost over the cost; where a model has no price the costs are unknown, and so is the share
(the GPU-hours' share is still given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from guardian.engine.report.chargeback import Summary, UsageRow, total

TOP = 3  # idle workloads named in the headline


@dataclass(frozen=True)
class WorkloadLine:
    """One workload's totals over the range."""

    namespace: str
    workload: str
    summary: Summary

    @property
    def share_idle(self) -> float | None:
        """Idle GPU-hours over allocated GPU-hours (prices aside: one model, the same)."""
        s = self.summary
        return s.idle / s.allocated if s.allocated else None

    @property
    def name(self) -> str:
        return f"{self.namespace or '(none)'}/{self.workload or '(none)'}"


@dataclass(frozen=True)
class Headline:
    total: Summary
    top: list[WorkloadLine]  # the most idle cost first, only those with idle hours

    @property
    def share_of_spend_idle(self) -> float | None:
        t = self.total
        if t.cost is None or t.idle_cost is None or not t.cost:
            return None
        return t.idle_cost / t.cost

    @property
    def share_of_hours_idle(self) -> float | None:
        t = self.total
        return t.idle / t.allocated if t.allocated else None


def _sort_key(line: WorkloadLine) -> tuple[float, float, str]:
    s = line.summary
    return (-(s.idle_cost or 0.0), -s.idle, line.name)


def workload_lines(rows: Sequence[UsageRow], days: Sequence[str]) -> list[WorkloadLine]:
    """Per namespace and workload (all groups, models and days), most idle cost first."""
    grouped: dict[tuple[str, str], list[UsageRow]] = {}
    for row in rows:
        grouped.setdefault((row.namespace, row.workload), []).append(row)
    lines = [
        WorkloadLine(namespace, workload, total(members, days, key=f"{namespace}/{workload}"))
        for (namespace, workload), members in grouped.items()
    ]
    return sorted(lines, key=_sort_key)


def headline(rows: Sequence[UsageRow], days: Sequence[str], top: int = TOP) -> Headline:
    idle = [line for line in workload_lines(rows, days) if line.summary.idle > 0]
    return Headline(total(rows, days), idle[:top])
