"""A reclaimed workload's own usage after the would-be reclaim, read back from history.

Two range queries per reclaimed workload, over the pods its name pattern matches (a
Deployment's later pods have new names): the GPUs it held, per model, and the peak
utilization of those GPUs. Busy means a peak at or above the threshold (the idle
rule's noise floor by default).
"""

from __future__ import annotations

from collections import defaultdict

from guardian.app.history.fetch import RangeFetcher, plan_chunks
from guardian.engine.report.profiles import MODEL, MetricProfile, matchers
from guardian.engine.simulate.identity import pod_pattern
from guardian.engine.simulate.outcomes import UsagePoint, WorkloadUsage
from guardian.model.history import TimeRange
from guardian.model.remediation_events import WorkloadRef


def workload_usage(
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
    for chunk in plan_chunks(span, chunk_seconds):
        held = fetcher.fetch_chunk(profile.allocated((MODEL,), sel), chunk, what)
        for series in held.series:
            model = series.labels.get(MODEL, "")
            for ts, value in series.points:
                gpus[ts][model] = gpus[ts].get(model, 0.0) + value
        peak = fetcher.fetch_chunk(profile.peak((), sel), chunk, what)
        for series in peak.series:
            for ts, value in series.points:
                peaks[ts] = max(peaks.get(ts, 0.0), value)
    points = tuple(
        UsagePoint(ts / 1000, gpus.get(ts, {}), peaks.get(ts, 0.0) >= busy_threshold)
        for ts in sorted(set(gpus) | set(peaks))
    )
    return WorkloadUsage(ref, span.step, points)
