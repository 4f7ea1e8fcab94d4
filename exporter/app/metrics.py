"""Render a snapshot: a custom collector on a private registry, rendered once per format.

Every scrape of the same snapshot shares the bytes; a new snapshot gets a new registry, so
series of vanished processes and pods simply are not there. Every series starts with the
node-wide labels: ``node``, and ``cluster`` when --cluster-name is set.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter.model.enrichment import Enrichment
from exporter.model.snapshot import (
    ExporterHealth,
    GpuSeries,
    PodDeviceSeries,
    PodGpuSeries,
    Snapshot,
)

_T = TypeVar("_T")

# After the node-wide labels. ``container`` is the name (from the pod's status, "" while
# unknown), ``container_id`` the 64-hex ID from the cgroup (docs/exporter.md says why both).
GPU_LABELS = ["gpu", "uuid"]
POD_LABELS = ["gpu", "uuid", "pod_uid", "container", "container_id"]
POD_DEVICE_LABELS = ["gpu", "uuid", "pod_uid"]

# (name, help, value getter); None values are omitted, never rendered as 0.
_GPU_GAUGES: tuple[tuple[str, str, Callable[[GpuSeries], float | None]], ...] = (
    (
        "guardian_gpu_utilization_ratio",
        "GPU utilization over the driver's last sample period (0-1).",
        lambda g: g.utilization_ratio,
    ),
    ("guardian_gpu_memory_used_bytes", "GPU memory in use.", lambda g: g.memory_used_bytes),
    ("guardian_gpu_memory_total_bytes", "GPU memory in total.", lambda g: g.memory_total_bytes),
    ("guardian_gpu_temperature_celsius", "GPU core temperature.", lambda g: g.temperature_celsius),
    ("guardian_gpu_power_watts", "GPU power draw.", lambda g: g.power_watts),
    (
        "guardian_gpu_unattributed_memory_used_bytes",
        "GPU memory used by processes in no pod.",
        lambda g: g.unattributed_memory_used_bytes,
    ),
    (
        "guardian_gpu_unattributed_processes",
        "Processes on the GPU that are in no pod.",
        lambda g: g.unattributed_processes,
    ),
    (
        "guardian_gpu_last_active_timestamp_seconds",
        (
            "Newest time the GPU's utilization (driver samples, else the reading at collection; "
            "or a process's SM use) was above --activity-floor. Absent until seen; lost when the "
            "exporter restarts, NVML goes down or the device disappears. Absent on MIG devices."
        ),
        lambda g: g.last_active_timestamp_seconds,
    ),
    (
        "guardian_gpu_observed_since_timestamp_seconds",
        (
            "Since when the exporter has read the GPU without a gap (no failed reading, readings "
            "at most 3 intervals apart). Restarts with the exporter and after an NVML outage."
        ),
        lambda g: g.observed_since_timestamp_seconds,
    ),
    (
        "guardian_gpu_last_process_timestamp_seconds",
        (
            "Newest collection at which a process was on the GPU (a pod's or a host process), "
            "or a MIG device held --mig-memory-floor-mib of memory. Absent until seen; lost "
            "when the exporter restarts, NVML goes down or the device disappears."
        ),
        lambda g: g.last_process_timestamp_seconds,
    ),
)
# (name, help, value getter, the snapshot's window label); absent until the window was
# observed without a gap, so a restart never reads as a low peak.
_GPU_PEAKS: tuple[
    tuple[str, str, Callable[[GpuSeries], float | None], Callable[[Snapshot], str]], ...
] = (
    (
        "guardian_gpu_memory_used_peak_bytes",
        (
            "Peak GPU memory used over the trailing window (at collection resolution). Absent "
            "until the exporter has read it for the whole window without a gap."
        ),
        lambda g: g.memory_used_peak_bytes,
        lambda s: s.memory_peak_window,
    ),
    (
        "guardian_gpu_utilization_peak_ratio",
        (
            "Peak GPU utilization (0-1) over the trailing window, from the driver's samples. "
            "Absent until the exporter has read it for the whole window without a gap, "
            "and on MIG devices."
        ),
        lambda g: g.utilization_peak_ratio,
        lambda s: s.activity_peak_window,
    ),
)
_GPU_COUNTERS: tuple[tuple[str, str, Callable[[GpuSeries], float | None]], ...] = (
    (
        "guardian_gpu_busy_seconds",
        "Busy time integrated from the driver's utilization samples.",
        lambda g: g.busy_seconds_total,
    ),
    (
        "guardian_gpu_energy_joules",
        "Energy used since the driver loaded.",
        lambda g: g.energy_joules_total,
    ),
)
_POD_GAUGES: tuple[tuple[str, str, Callable[[PodGpuSeries], float | None]], ...] = (
    (
        "guardian_pod_gpu_memory_used_bytes",
        "GPU memory used by the container's processes.",
        lambda p: p.memory_used_bytes,
    ),
    (
        "guardian_pod_gpu_sm_utilization_ratio",
        "SM utilization of the container's processes (0-1).",
        lambda p: p.sm_utilization_ratio,
    ),
    ("guardian_pod_gpu_processes", "The container's processes on the GPU.", lambda p: p.processes),
    (
        "guardian_pod_gpu_last_active_timestamp_seconds",
        (
            "Last time any of the container's processes had non-zero SM use (any use, not "
            "--activity-floor). Absent until seen, on MIG, and after an exporter restart."
        ),
        lambda p: p.last_active_timestamp_seconds,
    ),
    (
        "guardian_pod_gpu_observed_since_timestamp_seconds",
        (
            "Since when the exporter has seen the container's processes on the GPU without a gap; "
            "restarts when none was seen, a reading failed, or the exporter restarted."
        ),
        lambda p: p.observed_since_timestamp_seconds,
    ),
    (
        "guardian_pod_vgpu_memory_allocated_bytes",
        "The pod's vGPU memory share: physical total / vGPU ratio.",
        lambda p: p.vgpu_memory_allocated_bytes,
    ),
)

# One pod on one device, whatever its containers: kept --activity-peak-window after the
# pod's last process there (docs/exporter.md, "Idle facts").
_POD_DEVICE_GAUGES: tuple[tuple[str, str, Callable[[PodDeviceSeries], float | None]], ...] = (
    (
        "guardian_pod_device_last_process_timestamp_seconds",
        (
            "Newest collection at which a process of the pod was on the GPU. Kept for "
            "--activity-peak-window after it; lost on a gap in the GPU's readings."
        ),
        lambda p: p.last_process_timestamp_seconds,
    ),
    (
        "guardian_pod_device_idle_since_timestamp_seconds",
        (
            "Since when none of the pod's processes on the GPU showed SM use: its newest sample "
            "with SM use, else since the GPU was observed without a gap. Absent on MIG."
        ),
        lambda p: p.idle_since_timestamp_seconds,
    ),
)

# The exporter's own health: one series each, with the node-wide labels only.
_HEALTH_GAUGES: tuple[tuple[str, str, Callable[[ExporterHealth], float | None]], ...] = (
    (
        "guardian_exporter_nvml_up",
        "1 if the GPU backend is initialised and readable.",
        lambda h: int(h.nvml_up),
    ),
    (
        "guardian_exporter_snapshot_stale",
        "1 if the last collection did not finish in time and these are the previous values.",
        lambda h: int(h.stale),
    ),
    (
        "guardian_exporter_last_success_timestamp_seconds",
        "When the last collection cycle succeeded.",
        lambda h: h.last_success_timestamp_seconds,
    ),
)


def node_labels(snap: Snapshot) -> tuple[list[str], list[str]]:
    """The labels every series carries, and their values."""
    if snap.cluster:
        return ["node", "cluster"], [snap.node, snap.cluster]
    return ["node"], [snap.node]


class SnapshotCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot
        base, values = node_labels(snap)
        gpu_keys = [[*values, g.index, g.uuid] for g in snap.gpus]

        info = GaugeMetricFamily(
            "guardian_gpu_info",
            "GPU identity; always 1.",
            labels=[*base, "gpu", "uuid", "model", "driver_version", "mig"],
        )
        for g in snap.gpus:
            info.add_metric(
                [*values, g.index, g.uuid, g.model, snap.driver_version, g.mig.value], 1
            )
        yield info
        yield from _gauges(_GPU_GAUGES, base + GPU_LABELS, gpu_keys, snap.gpus)
        for name, doc, get in _GPU_COUNTERS:
            counter = CounterMetricFamily(name, doc, labels=base + GPU_LABELS)
            for key, g in zip(gpu_keys, snap.gpus, strict=True):
                value = get(g)
                if value is not None:
                    counter.add_metric(key, value)
            yield counter
        for name, doc, get, window in _GPU_PEAKS:
            peak = GaugeMetricFamily(name, doc, labels=[*base, *GPU_LABELS, "window"])
            label = window(snap)
            for key, g in zip(gpu_keys, snap.gpus, strict=True):
                value = get(g)
                if value is not None:
                    peak.add_metric([*key, label], value)
            yield peak
        yield from _pods(snap, base, values)
        yield from _pod_devices(snap, base, values)
        if snap.enrichment is not None:
            yield from _kubernetes(snap.enrichment, base, values)
        yield from _health(snap, base, values)


def _pods(snap: Snapshot, base: list[str], values: list[str]) -> Iterator[Metric]:
    extra = snap.enrichment
    names = list(extra.label_names) if extra is not None else []
    keys = []
    for p in snap.pods:
        container = ""
        pod: tuple[str, ...] = ()
        if extra is not None:
            container = extra.container_names.get((p.pod_uid, p.container_id), "")
            # A pod the API does not know keeps its pod_uid series, unnamed.
            pod = extra.pod_labels.get(p.pod_uid, extra.unknown_pod)
        keys.append([*values, p.gpu, p.uuid, p.pod_uid, container, p.container_id, *pod])
    yield from _gauges(_POD_GAUGES, base + POD_LABELS + names, keys, snap.pods)


def _pod_devices(snap: Snapshot, base: list[str], values: list[str]) -> Iterator[Metric]:
    extra = snap.enrichment
    names = list(extra.label_names) if extra is not None else []
    keys = []
    for p in snap.pod_devices:
        pod = extra.pod_labels.get(p.pod_uid, extra.unknown_pod) if extra is not None else ()
        keys.append([*values, p.gpu, p.uuid, p.pod_uid, *pod])
    yield from _gauges(_POD_DEVICE_GAUGES, base + POD_DEVICE_LABELS + names, keys, snap.pod_devices)


def _gauges(
    table: Sequence[tuple[str, str, Callable[[_T], float | None]]],
    labels: list[str],
    keys: list[list[str]],
    items: Sequence[_T],
) -> Iterator[Metric]:
    """One gauge family per table row; an item's None value is omitted, never 0."""
    for name, doc, get in table:
        gauge = GaugeMetricFamily(name, doc, labels=labels)
        for key, item in zip(keys, items, strict=True):
            value = get(item)
            if value is not None:
                gauge.add_metric(key, value)
        yield gauge


def _kubernetes(extra: Enrichment, base: list[str], values: list[str]) -> Iterator[Metric]:
    names = list(extra.label_names)
    allocated = GaugeMetricFamily(
        "guardian_pod_gpu_allocated",
        'GPUs the kubelet allocated to the pod\'s container (1 per GPU; a count with uuid="" '
        "when only pod limits are known), including pods that run no GPU process.",
        labels=[*base, "gpu", "uuid", "container", "resource", *names],
    )
    for a in extra.allocations:
        allocated.add_metric([*values, a.gpu, a.uuid, a.container, a.resource, *a.labels], a.value)
    yield allocated
    unallocated = GaugeMetricFamily(
        "guardian_pod_gpu_unallocated_use",
        "1: the pod's process uses a GPU that is not allocated to the pod.",
        labels=base + POD_LABELS + names,
    )
    for u in extra.unallocated_use:
        unallocated.add_metric(
            [*values, u.gpu, u.uuid, u.pod_uid, u.container, u.container_id, *u.labels], 1
        )
    yield unallocated
    kube_up = GaugeMetricFamily(
        "guardian_exporter_kube_up",
        "1 if the Kubernetes API answered the exporter's last pod list or watch.",
        labels=base,
    )
    kube_up.add_metric(values, int(bool(extra.kube_up)))
    yield kube_up
    # The cluster's identity, whatever its name (the kube-system Namespace's UID, as
    # OpenTelemetry's k8s.cluster.uid): the controller refuses alerts whose exporter
    # reports another cluster's. Absent until the UID is read.
    identity = GaugeMetricFamily(
        "guardian_exporter_cluster_info",
        "The UID of the cluster the exporter runs in (its kube-system Namespace's); always 1.",
        labels=[*base, "cluster_uid"],
    )
    if extra.cluster_uid:
        identity.add_metric([*values, extra.cluster_uid], 1)
    yield identity


def _health(snap: Snapshot, base: list[str], values: list[str]) -> Iterator[Metric]:
    h = snap.health
    yield from _gauges(_HEALTH_GAUGES, base, [values], [h])
    durations = GaugeMetricFamily(
        "guardian_exporter_collect_duration_seconds",
        "Wall time of the last collection, per stage.",
        labels=[*base, "stage"],
    )
    for stage, seconds in h.stage_seconds:
        durations.add_metric([*values, stage], seconds)
    yield durations
    errors = CounterMetricFamily(
        "guardian_exporter_errors", "Errors met while collecting.", labels=[*base, "op", "kind"]
    )
    for e in h.errors:
        errors.add_metric([*values, e.op, e.kind], e.count)
    yield errors


class RenderTimer:
    """The last render's wall time, reported as stage "render" by the next snapshot."""

    def __init__(self) -> None:
        self.last_seconds = 0.0


class RenderedSnapshot:
    """A snapshot plus its exposition, rendered at most once per format."""

    def __init__(self, snapshot: Snapshot, timer: RenderTimer | None = None) -> None:
        self.snapshot = snapshot
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(snapshot))
        self._timer = timer
        self._lock = threading.Lock()
        self._bodies: dict[str, bytes] = {}

    def body(self, accept: str | None, gzipped: bool = False) -> tuple[bytes, str]:
        encoder, content_type = choose_encoder(accept or "")
        key = f"{content_type};gzip" if gzipped else content_type
        cached = self._bodies.get(key)
        if cached is not None:
            return cached, content_type
        with self._lock:  # concurrent scrapes of a new snapshot wait for one render
            cached = self._bodies.get(key)
            if cached is None:
                plain = self._bodies.get(content_type)
                if plain is None:
                    started = time.perf_counter()
                    plain = self._bodies[content_type] = encoder(self.registry)
                    if self._timer is not None:
                        self._timer.last_seconds = time.perf_counter() - started
                cached = plain
                if gzipped:
                    cached = self._bodies[key] = gzip.compress(plain, compresslevel=6)
        return cached, content_type
