"""The workloads' pods and usage over time, read back from history as the replay asks.

Per workload, over the pods its name pattern matches (a Deployment's later pods have new
names; a kind that does not name its pods after itself adds the pods known to be its own):
which GPUs they held and of which model (two instant queries), then two range queries:
the allocation series of those pods and the utilization of those GPUs, joined here step
by step (cheaper than a join the server evaluates at every step). Busy means a peak at or
above the threshold (the idle rule's noise floor by default).

A workload is read when the replay first judges its reclaim (or refuses it), from a
little before that moment (the rules' lookback and a step, so that a pod seen from the
first point is older than the evidence) to the end of the range, together with the
cycle's other candidates, up to ``BATCH`` per query. What was read gives the replay the
workload's pods at each later cycle, and the outcomes what a reclaim or a right-size
would have freed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from guardian.app.history.fetch import RangeFetcher, plan_chunks
from guardian.engine.report.profiles import MODEL, MetricProfile, matchers
from guardian.engine.simulate.identity import pod_pattern
from guardian.engine.simulate.pod_tracks import GpuTrack, device_of
from guardian.engine.simulate.reclaim_outcomes import WorkloadUsage, usage_of
from guardian.engine.simulate.replay_records import InCluster, WouldStep
from guardian.model.history import TimeRange
from guardian.model.query import QueryResult, RangeSeries
from guardian.model.reclaim import MemberPod
from guardian.model.remediation_events import WorkloadRef
from guardian_common.words import plural


class InstantQuerier(Protocol):
    def query(self, expr: str, ts: float) -> QueryResult: ...


BATCH = 50  # workloads per query: their pod patterns make one regex
_Key = tuple[WorkloadRef, str, tuple[str, ...]]  # workload, pod, the GPU's identity labels


@dataclass(frozen=True)
class UsageQuery:
    """How usage is read: the cache's ``span`` is the replay's range, and each read
    narrows it to start ``pad`` seconds before the moment it is asked for. ``owners``:
    the pods whose workload is known (from the alerts), by (namespace, pod)."""

    querier: InstantQuerier
    fetcher: RangeFetcher
    profile: MetricProfile
    span: TimeRange
    busy_threshold: float
    chunk_seconds: float
    pad: float = 0.0
    owners: Mapping[tuple[str, str], WorkloadRef] = field(default_factory=dict)


def _pods_regex(ref: WorkloadRef, owners: Mapping[tuple[str, str], WorkloadRef]) -> str:
    known = sorted(re.escape(pod) for (ns, pod), root in owners.items() if root == ref)
    return "|".join([pod_pattern(ref), *known])


def _owner(
    labels: Mapping[str, str],
    patterns: Mapping[WorkloadRef, re.Pattern[str]],
    owners: Mapping[tuple[str, str], WorkloadRef],
) -> WorkloadRef | None:
    """Which of the workloads read a series' pod belongs to (its known root first)."""
    key = (labels.get("namespace", ""), labels.get("pod", ""))
    known = owners.get(key)
    if known is not None:
        return known if known in patterns else None
    for ref, pattern in patterns.items():
        if ref.namespace == key[0] and pattern.fullmatch(key[1]):
            return ref
    return None


def workloads_usage(
    query: UsageQuery, refs: Sequence[WorkloadRef], cluster: str = ""
) -> dict[WorkloadRef, WorkloadUsage]:
    """Each workload's usage over ``query.span``, read for up to ``BATCH`` workloads at once."""
    out: dict[WorkloadRef, WorkloadUsage] = {}
    ordered = sorted(set(refs), key=str)
    for i in range(0, len(ordered), BATCH):
        out.update(_batch_usage(query, ordered[i : i + BATCH], cluster))
    return out


@dataclass
class _Read:
    """What the range queries of one batch gave, by workload, pod and GPU."""

    held: defaultdict[_Key, list[int]] = field(default_factory=lambda: defaultdict(list))
    busy: defaultdict[_Key, set[int]] = field(default_factory=lambda: defaultdict(set))
    labels: dict[_Key, Mapping[str, str]] = field(default_factory=dict)

    def add(self, key: _Key, series: RangeSeries, busy_on: set[int] | None) -> None:
        stamps = [ts for ts, _value in series.samples]
        self.held[key].extend(stamps)
        self.labels.setdefault(key, series.labels)
        if busy_on:
            self.busy[key].update(busy_on.intersection(stamps))


def _batch_usage(
    query: UsageQuery, refs: Sequence[WorkloadRef], cluster: str
) -> dict[WorkloadRef, WorkloadUsage]:
    querier, fetcher, profile, span = query.querier, query.fetcher, query.profile, query.span
    # A pod known to be a workload's is its own; others are told by their names.
    patterns = {ref: re.compile(pod_pattern(ref)) for ref in refs}
    exact = {"cluster": cluster} if cluster else {}
    regex = {
        "namespace": "|".join(sorted({re.escape(r.namespace) for r in refs})),
        "pod": "|".join(sorted({_pods_regex(r, query.owners) for r in refs})),
    }
    sel = matchers(exact, regex)
    held_devices = querier.query(profile.devices(sel, span.end - span.start), span.end)
    devices = [s.labels.get(profile.device_label, "") for s in held_devices.samples]
    if not devices:
        return {ref: WorkloadUsage(ref, span.step, since=span.start) for ref in refs}
    gsel = profile.device_matchers(sel, devices)
    window = span.end - span.start
    model_of = {
        (m.labels.get("namespace", ""), m.labels.get("pod", "")): m.labels.get(MODEL, "")
        for m in querier.query(profile.models(sel, gsel, window), span.end).samples
    }
    read = _Read()
    more = ", ..." if len(refs) > 1 else ""
    what = f"the usage of {plural(len(refs), 'workload')} ({refs[0]}{more})"
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
        for series in alloc.series:
            ref = _owner(series.labels, patterns, query.owners)
            if ref is None:
                continue
            gpu = tuple(series.labels.get(k, "") for k in key)
            read.add((ref, series.labels.get("pod", ""), gpu), series, busy_on.get(gpu))
    return {ref: usage_of(ref, span.step, _tracks(read, ref, model_of), span.start) for ref in refs}


def _tracks(
    read: _Read, ref: WorkloadRef, model_of: Mapping[tuple[str, str], str]
) -> list[GpuTrack]:
    out = []
    for key, stamps in sorted(read.held.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        if key[0] != ref:
            continue
        labels, pod = read.labels[key], key[1]
        out.append(
            GpuTrack(
                pod,
                device_of(labels),
                labels.get("node") or labels.get("Hostname", ""),
                model_of.get((ref.namespace, pod), ""),
                tuple(sorted(set(stamps))),
                tuple(sorted(read.busy.get(key, ()))),
            )
        )
    return out


def lookback_pad(windows: Mapping[tuple[str, str], float], step: float) -> float:
    """What to read before a workload is judged: the longest rule lookback and a step, in
    whole steps (the points read stay on the cycles' grid)."""
    longest = max(windows.values(), default=0.0)
    return (math.ceil(longest / step) + 1) * step


class UsageCache:
    """The replay's pods (:class:`PodSource`) and ``restore_times``: each workload read
    once, with the cycle's other candidates ahead (their usage from now on covers any
    later question about them), and kept for the outcomes."""

    def __init__(self, query: UsageQuery) -> None:
        self.query = query
        self.usages: dict[WorkloadRef, WorkloadUsage] = {}

    def load(self, roots: Sequence[InCluster], ahead: Sequence[InCluster], now: float) -> None:
        if all(ref in self.usages for ref, _cluster in roots):
            return
        wanted = dict(ahead) | dict(roots)
        missing = {ref: c for ref, c in wanted.items() if ref not in self.usages}
        for cluster in sorted(set(missing.values())):
            self._read([ref for ref, c in missing.items() if c == cluster], cluster, now)

    def members(self, ref: WorkloadRef, now: float) -> tuple[MemberPod, ...] | None:
        usage = self.usages.get(ref)
        return None if usage is None else usage.members(now)

    def __call__(
        self, steps: Sequence[WouldStep], candidates: Sequence[InCluster]
    ) -> dict[WorkloadRef, float | None]:
        at = steps[0].at
        self.load([(s.workload, s.alert_labels.get("cluster", "")) for s in steps], candidates, at)
        return {s.workload: self.usages[s.workload].first_busy(at, s.removed) for s in steps}

    def _read(self, refs: Sequence[WorkloadRef], cluster: str, at: float) -> None:
        q = self.query
        start = min(at - q.pad, q.span.end)
        self.usages.update(
            workloads_usage(
                replace(q, span=TimeRange(start, q.span.end, q.span.step)), refs, cluster
            )
        )
