"""Read GPU-hours per day from Prometheus or Thanos and price them.

For each UTC day of the range (the first and last may be partial), one query per view
(allocated, used, idle, and idle in partly idle workloads) sums the view over the day on
a ``resolution`` grid:
``sum_over_time((VIEW)[<day - 1ms>:<resolution>])`` at the day's end, times the
resolution, is the day's GPU-hours. Whole days are read as range queries with a one-day step, a
chunk (``--chunk``) at a time; partial days as instant queries. Subquery points sit on
multiples of the resolution, so consecutive days never count a point twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.history.detect import detect_profile
from guardian.app.history.fetch import ChunkFailedError, RangeFetcher, plan_chunks
from guardian.app.history.progress import NoProgress, Progress
from guardian.app.settings.config_file import Settings
from guardian.engine.report.chargeback import (
    DAY,
    PodHours,
    UsageRow,
    day_of,
    days_of,
    usage_rows,
    windows,
)
from guardian.engine.report.profiles import GROUP, MODEL, MetricProfile
from guardian.model.history import TimeRange
from guardian.model.labels import LabelSet
from guardian.model.times import rfc3339
from guardian_common.durations import format_duration
from guardian_common.errors import GuardianError

BY = ("cluster", GROUP, "namespace", "pod", MODEL)


@dataclass(frozen=True)
class ReportOptions:
    since: float
    until: float
    resolution: float = 300.0  # seconds between the points summed
    floor: float = 0.05  # utilization under this is idle
    chunk_seconds: float = 86400.0
    metrics: str = "auto"


@dataclass(frozen=True)
class ReportResult:
    since: float
    until: float
    days: list[str]
    rows: list[UsageRow]
    currency: str
    metrics: str
    resolution: float
    floor: float
    queries: int


def _hours(labels: LabelSet, day: str, metric: str, value: float, res: float) -> PodHours:
    return PodHours(
        day,
        labels.get("cluster", ""),
        labels.get(GROUP, ""),
        labels.get("namespace", ""),
        labels.get("pod", ""),
        labels.get(MODEL, ""),
        metric,
        value * res / 3600.0,
    )


def _window(seconds: float) -> str:
    """A subquery range one millisecond short: a point on the window's start belongs to
    the day before (Prometheus 2's ranges include their start, 3's do not)."""
    return f"{round(seconds * 1000) - 1}ms"


class UsageReport:
    def __init__(
        self,
        settings: Settings,
        options: ReportOptions,
        querier: PrometheusQuerier,
        *,
        progress: Progress | None = None,
    ) -> None:
        self.settings = settings
        self.options = options
        self.querier = querier
        self.fetcher = RangeFetcher(querier)
        self.progress = progress or NoProgress()

    def run(self) -> ReportResult:
        o = self.options
        if o.resolution <= 0 or DAY % o.resolution:
            raise GuardianError(f"the resolution must divide a day, got {o.resolution}s")
        span = TimeRange(o.since, o.until, o.resolution)
        profile = detect_profile(self.querier, span, o.metrics)
        ranges = windows(o.since, o.until)
        hours = list(self._read(profile, ranges))
        self.progress.close()
        prices = self.settings.prices.table()
        return ReportResult(
            o.since,
            o.until,
            days_of(ranges),
            usage_rows(hours, prices),
            prices.currency,
            profile.name,
            o.resolution,
            o.floor,
            self.fetcher.queries,
        )

    def _views(self, profile: MetricProfile) -> dict[str, str]:
        return {
            "allocated": profile.allocated(BY),
            "used": profile.used(BY),
            "idle": profile.idle(BY, self.options.floor),
            "idle_partly": profile.idle_partly(BY, self.options.floor),
        }

    def _read(
        self, profile: MetricProfile, ranges: Sequence[tuple[float, float]]
    ) -> Iterator[PodHours]:
        res = self.options.resolution
        whole = [end for start, end in ranges if end - start == DAY]
        partial = [(start, end) for start, end in ranges if end - start != DAY]
        chunks = (
            plan_chunks(TimeRange(whole[0], whole[-1], DAY), self.options.chunk_seconds)
            if whole
            else []
        )
        views = self._views(profile)
        total = len(views) * (len(chunks) + len(partial))
        done = 0
        for metric, view in views.items():
            daily = f"sum_over_time(({view})[{_window(DAY)}:{int(res)}s])"
            for chunk in chunks:
                result = self.fetcher.fetch_chunk(daily, chunk, f"{metric} GPU-hours")
                for series in result.series:
                    for ts, value in series.samples:
                        yield _hours(series.labels, day_of(ts / 1000), metric, value, res)
                done += 1
                self.progress.update(done, total, f"{metric}: {chunk.describe()}")
            for start, end in partial:
                yield from self._partial(view, metric, start, end)
                done += 1
                self.progress.update(done, total, f"{metric}: {rfc3339(start)} to {rfc3339(end)}")

    def _partial(self, view: str, metric: str, start: float, end: float) -> Iterator[PodHours]:
        res = self.options.resolution
        expr = f"sum_over_time(({view})[{_window(end - start)}:{int(res)}s])"
        self.fetcher.queries += 1
        try:
            answer = self.querier.query(expr, end)
        except GuardianError as exc:
            window = f"{rfc3339(start)} to {rfc3339(end)} ({format_duration(end - start)})"
            raise ChunkFailedError(f"the partial day {window} failed for {metric}: {exc}") from exc
        for sample in answer.samples:
            yield _hours(sample.labels, day_of(end), metric, sample.value, res)
