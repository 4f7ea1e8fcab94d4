"""A reclaimed workload's own usage after the would-be reclaim, read back from history.

Per reclaimed workload, over the pods its name pattern matches (a Deployment's later
pods have new names): which GPUs they held and of which model (two instant queries),
then two range queries: the allocation series of those pods and the utilization of
those GPUs, joined here step by step (cheaper than a join the server evaluates at
every step). The
workloads reclaimed in one cycle are read together, up to ``BATCH`` per query. Busy
means a peak at or above the threshold (the idle rule's noise floor by default).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Protocol

from guardian.app.history.fetch import RangeFetcher, plan_chunks
from guardian.engine.report.profiles import MODEL, MetricProfile, matchers
from guardian.engine.simulate.identity import pod_pattern
from guardian.engine.simulate.ladder_replay import WouldStep
from guardian.engine.simulate.reclaim_outcomes import WorkloadUsage
from guardian.model.history import TimeRange
from guardian.model.query import QueryResult
from guardian.model.remediation_events import WorkloadRef


class InstantQuerier(Protocol):
    def query(self, expr: str, ts: float) -> QueryResult: ...


BATCH = 50  # workloads per query: their pod patterns make one regex


def _belongs(labels: Mapping[str, str], ref: WorkloadRef, pattern: re.Pattern[str]) -> bool:
    return labels.get("namespace") == ref.namespace and bool(
        pattern.fullmatch(labels.get("pod", ""))
    )


@dataclass(frozen=True)
class UsageQuery:
    """How usage is read: the cache's ``span`` is the replay's range, and each read
    narrows it to start at the reclaim (usage is read from a reclaim to its end)."""

    querier: InstantQuerier
    fetcher: RangeFetcher
    profile: MetricProfile
    span: TimeRange
    busy_threshold: float
    chunk_seconds: float


def workloads_usage(
    query: UsageQuery, refs: Sequence[WorkloadRef], cluster: str = ""
) -> dict[WorkloadRef, WorkloadUsage]:
    """Each workload's usage over ``query.span``, read for up to ``BATCH`` workloads at once."""
    out: dict[WorkloadRef, WorkloadUsage] = {}
    ordered = sorted(set(refs), key=str)
    for i in range(0, len(ordered), BATCH):
        out.update(_batch_usage(query, ordered[i : i + BATCH], cluster))
    return out


def _batch_usage(
    query: UsageQuery, refs: Sequence[WorkloadRef], cluster: str
) -> dict[WorkloadRef, WorkloadUsage]:
    querier, fetcher, profile, span = query.querier, query.fetcher, query.profile, query.span
    patterns = {ref: re.compile(pod_pattern(ref)) for ref in refs}
    exact = {"cluster": cluster} if cluster else {}
    regex = {
        "namespace": "|".join(sorted({re.escape(r.namespace) for r in refs})),
        "pod": "|".join(sorted({pod_pattern(r) for r in refs})),
    }
    sel = matchers(exact, regex)
    held_devices = querier.query(profile.devices(sel, span.end - span.start), span.end)
    devices = [s.labels.get(profile.device_label, "") for s in held_devices.samples]
    if not devices:
        return {ref: WorkloadUsage(ref, span.step) for ref in refs}
    gsel = profile.device_matchers(sel, devices)
    window = span.end - span.start
    model_of = {
        (m.labels.get("namespace", ""), m.labels.get("pod", "")): m.labels.get(MODEL, "")
        for m in querier.query(profile.models(sel, gsel, window), span.end).samples
    }
    held: dict[WorkloadRef, defaultdict[str, list[tuple[int, float]]]] = {
        r: defaultdict(list) for r in refs
    }
    busy: dict[WorkloadRef, set[int]] = {r: set() for r in refs}
    what = f"the usage of {len(refs)} reclaimed workloads ({refs[0]}, ...)"
    key = profile.gpu_key
    for chunk in plan_chunks(span, query.chunk_seconds):
        # Raw per-GPU series, joined here: a join at every step costs the server more.
        alloc = fetcher.fetch_chunk(profile.pod_allocation.format(sel=sel), chunk, what)
        util = fetcher.fetch_chunk(profile.utilization.format(gsel=gsel), chunk, what)
        busy_on = {
            tuple(u.labels.get(k, "") for k in key): {
                ts for ts, v in u.samples if v >= query.busy_threshold
            }
            for u in util.series
        }
        for ref, pattern in patterns.items():
            for series in alloc.series:
                if not _belongs(series.labels, ref, pattern):
                    continue
                pod = (series.labels.get("namespace", ""), series.labels.get("pod", ""))
                held[ref][model_of.get(pod, "")].extend(series.samples)
                gpu_busy = busy_on.get(tuple(series.labels.get(k, "") for k in key))
                if gpu_busy:
                    busy[ref].update(gpu_busy.intersection(map(itemgetter(0), series.samples)))
    return {
        ref: WorkloadUsage(ref, span.step, dict(held[ref]), tuple(sorted(busy[ref])))
        for ref in refs
    }


class UsageCache:
    """The replay's ``restore_times``: the usage of each cycle's reclaimed workloads, read
    with the cycle's other candidates ahead (their usage from now on covers any later
    reclaim of theirs), and kept for the outcomes."""

    def __init__(self, query: UsageQuery) -> None:
        self.query = query
        self.usages: dict[WorkloadRef, WorkloadUsage] = {}

    def __call__(
        self, steps: Sequence[WouldStep], candidates: Sequence[tuple[WorkloadRef, str]]
    ) -> dict[WorkloadRef, float | None]:
        at = steps[0].at
        reclaimed = {s.workload: s.alert_labels.get("cluster", "") for s in steps}
        if any(ref not in self.usages for ref in reclaimed):
            wanted = dict(candidates) | reclaimed
            missing = {ref: c for ref, c in wanted.items() if ref not in self.usages}
            for cluster in sorted(set(missing.values())):
                self._read([ref for ref, c in missing.items() if c == cluster], cluster, at)
        return {ref: self.usages[ref].first_busy(at) for ref in reclaimed}

    def _read(self, refs: Sequence[WorkloadRef], cluster: str, at: float) -> None:
        q = self.query
        from_reclaim = replace(q, span=TimeRange(at, q.span.end, q.span.step))
        self.usages.update(workloads_usage(from_reclaim, refs, cluster))
