"""A reclaimed workload's own usage after the would-be reclaim, read back from history.

Per reclaimed workload, over the pods its name pattern matches (a Deployment's later
pods have new names): which GPUs they held (one instant query), then two range queries
restricted to those GPUs: the GPUs held, per model, and their peak utilization. Busy means a peak at or above the threshold (the idle
rule's noise floor by default).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from guardian.app.history.fetch import RangeFetcher, plan_chunks
from guardian.engine.report.profiles import MODEL, MetricProfile, matchers
from guardian.engine.simulate.identity import pod_pattern
from guardian.engine.simulate.outcomes import UsagePoint, WorkloadUsage
from guardian.model.history import TimeRange
from guardian.model.query import QueryResult
from guardian.model.remediation_events import WorkloadRef


class InstantQuerier(Protocol):
    def query(self, expr: str, ts: float) -> QueryResult: ...


def workload_usage(
    querier: InstantQuerier,
    fetcher: RangeFetcher,
    profile: MetricProfile,
    ref: WorkloadRef,
    span: TimeRange,
    *,
    cluster: str = "",
    busy_threshold: float = 0.05,
    chunk_seconds: float = 86400.0,
) -> WorkloadUsage:
    exact = {"namespace": ref.namespace} | ({"cluster": cluster} if cluster else {})
    sel = matchers(exact, {"pod": pod_pattern(ref)})
    gpus: defaultdict[int, dict[str, float]] = defaultdict(dict)
    peaks: dict[int, float] = {}
    what = f"the usage of {ref}"
    held_devices = querier.query(profile.devices(sel, span.end - span.start), span.end)
    devices = [s.labels.get(profile.device_label, "") for s in held_devices.samples]
    if not devices:
        return WorkloadUsage(ref, span.step)
    gsel = profile.device_matchers(sel, devices)
    for chunk in plan_chunks(span, chunk_seconds):
        held = fetcher.fetch_chunk(profile.allocated((MODEL,), sel, gsel), chunk, what)
        for series in held.series:
            model = series.labels.get(MODEL, "")
            for ts, value in series.points:
                gpus[ts][model] = gpus[ts].get(model, 0.0) + value
        peak = fetcher.fetch_chunk(profile.peak((), sel, gsel), chunk, what)
        for series in peak.series:
            for ts, value in series.points:
                peaks[ts] = max(peaks.get(ts, 0.0), value)
    points = tuple(
        UsagePoint(ts / 1000, gpus.get(ts, {}), peaks.get(ts, 0.0) >= busy_threshold)
        for ts in sorted(set(gpus) | set(peaks))
    )
    return WorkloadUsage(ref, span.step, points)
