"""GPU-hours and cost per day and per key: the pure part of ``guardian report``.

The app reads, per day (UTC) and per pod and GPU model, how many GPU-hours were
allocated, used (weighted by utilization) and idle (under the noise floor), and how many
of the idle ones were in a partly idle workload (one that held a GPU that was not idle at
the same time). Here those become rows per day, cluster, group, namespace, workload and
model, priced by model, with the idle hours split into those in fully idle workloads and
those in partly idle ones, and summaries by any one dimension with a daily trend.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from guardian.engine.notify.findings import PriceTable
from guardian.engine.simulate.identity import workload_from_pod

DAY = 86400.0
DIMENSIONS = ("gpu_group", "namespace", "workload", "model")
METRICS = ("allocated", "used", "idle", "idle_partly")
HOURS = ("allocated", "used", "idle", "idle_fully", "idle_partly")  # what rows and sums carry


def day_of(ts: float) -> str:
    """The UTC day a window ending at ``ts`` belongs to (its end is exclusive of the next)."""
    return datetime.fromtimestamp(ts - 0.001, tz=UTC).strftime("%Y-%m-%d")


def windows(since: float, until: float) -> list[tuple[float, float]]:
    """``(since, until]`` cut at UTC midnights: ``(start, end]`` per day, partial at the ends."""
    out = []
    start = since
    while start < until:
        end = min((start // DAY + 1) * DAY, until)
        out.append((start, end))
        start = end
    return out


@dataclass(frozen=True)
class PodHours:
    """What the queries return: one window's GPU-hours for one pod and GPU model."""

    day: str
    cluster: str
    gpu_group: str
    namespace: str
    pod: str
    model: str
    metric: str  # allocated | used | idle | idle_partly
    gpu_hours: float


@dataclass(frozen=True)
class UsageRow:
    day: str
    cluster: str
    gpu_group: str
    namespace: str
    workload: str
    model: str
    allocated: float = 0.0
    used: float = 0.0
    idle: float = 0.0
    idle_fully: float = 0.0  # of the idle: in workloads none of whose GPUs was busy then
    idle_partly: float = 0.0  # of the idle: in workloads that held a GPU not idle then
    cost: float | None = 0.0  # of the allocated GPU-hours; None: no price for the model
    idle_cost: float | None = 0.0

    def key(self, by: str) -> str:
        value: str = getattr(self, by)
        return value or "(none)"


def usage_rows(hours: Iterable[PodHours], prices: PriceTable) -> list[UsageRow]:
    sums: defaultdict[tuple[str, str, str, str, str, str], dict[str, float]] = defaultdict(
        lambda: dict.fromkeys(METRICS, 0.0)
    )
    for h in hours:
        ref, _ = workload_from_pod(h.namespace, h.pod)
        workload = f"{ref.kind}/{ref.name}"
        key = (h.day, h.cluster, h.gpu_group, h.namespace, workload, h.model)
        sums[key][h.metric] += h.gpu_hours
    rows = []
    for (day, cluster, group, namespace, workload, model), v in sorted(sums.items()):
        price = prices.price(model or None)
        partly = min(v["idle_partly"], v["idle"])
        rows.append(
            UsageRow(
                day,
                cluster,
                group,
                namespace,
                workload,
                model,
                allocated=v["allocated"],
                used=v["used"],
                idle=v["idle"],
                idle_fully=v["idle"] - partly,
                idle_partly=partly,
                cost=None if price is None else price * v["allocated"],
                idle_cost=None if price is None else price * v["idle"],
            )
        )
    return rows


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclass
class Summary:
    """One key's totals, and per day (every day of the range, zeros included)."""

    key: str
    allocated: float = 0.0
    used: float = 0.0
    idle: float = 0.0
    idle_fully: float = 0.0
    idle_partly: float = 0.0
    cost: float | None = 0.0
    idle_cost: float | None = 0.0
    daily: dict[str, dict[str, float | None]] = field(default_factory=dict)

    @property
    def utilization(self) -> float | None:
        return self.used / self.allocated if self.allocated else None

    def add(self, row: UsageRow) -> None:
        day = self.daily[row.day]
        for name in HOURS:
            setattr(self, name, getattr(self, name) + getattr(row, name))
            day[name] = (day[name] or 0.0) + getattr(row, name)
        self.cost = _add(self.cost, row.cost)
        self.idle_cost = _add(self.idle_cost, row.idle_cost)
        day["cost"] = _add(day["cost"], row.cost)
        day["idle_cost"] = _add(day["idle_cost"], row.idle_cost)


def summarize(rows: Sequence[UsageRow], by: str, days: Sequence[str]) -> list[Summary]:
    """Per value of ``by``, most idle cost (then idle hours) first."""
    if by not in DIMENSIONS:
        raise ValueError(f"cannot summarize by {by!r}; one of {', '.join(DIMENSIONS)}")
    out: dict[str, Summary] = {}
    for row in rows:
        key = row.key(by)
        summary = out.get(key)
        if summary is None:
            summary = out[key] = Summary(key, daily={d: _zero_day() for d in days})
        summary.add(row)
    return sorted(out.values(), key=lambda s: (-(s.idle_cost or 0.0), -s.idle, s.key))


def total(rows: Sequence[UsageRow], days: Sequence[str], key: str = "total") -> Summary:
    summary = Summary(key, daily={d: _zero_day() for d in days})
    for row in rows:
        summary.add(row)
    return summary


def _zero_day() -> dict[str, float | None]:
    return {**dict.fromkeys(HOURS, 0.0), "cost": 0.0, "idle_cost": 0.0}


def days_of(ranges: Sequence[tuple[float, float]]) -> list[str]:
    return [day_of(end) for _start, end in ranges]
