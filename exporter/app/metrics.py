"""Render a snapshot: a custom collector on a private registry, rendered once per format.

Every scrape of the same snapshot shares the bytes; a new snapshot gets a new registry, so
series of vanished processes and pods simply are not there.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter.model.enrichment import Enrichment
from exporter.model.snapshot import GpuSeries, PodGpuSeries, Snapshot

GPU_LABELS = ["node", "gpu", "uuid"]
POD_LABELS = ["node", "gpu", "uuid", "pod_uid", "container"]

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
        "Last time any of the container's processes had non-zero SM use.",
        lambda p: p.last_active_timestamp_seconds,
    ),
    (
        "guardian_pod_vgpu_memory_allocated_bytes",
        "The pod's vGPU memory share: physical total / vGPU ratio.",
        lambda p: p.vgpu_memory_allocated_bytes,
    ),
)


class SnapshotCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot
        node = snap.node
        gpu_keys = [[node, g.index, g.uuid] for g in snap.gpus]

        info = GaugeMetricFamily(
            "guardian_gpu_info",
            "GPU identity; always 1.",
            labels=["node", "gpu", "uuid", "model", "driver_version", "mig"],
        )
        for g in snap.gpus:
            info.add_metric([node, g.index, g.uuid, g.model, snap.driver_version, g.mig.value], 1)
        yield info
        for name, doc, get in _GPU_GAUGES:
            gauge = GaugeMetricFamily(name, doc, labels=GPU_LABELS)
            for key, g in zip(gpu_keys, snap.gpus, strict=True):
                value = get(g)
                if value is not None:
                    gauge.add_metric(key, value)
            yield gauge
        for name, doc, get in _GPU_COUNTERS:
            counter = CounterMetricFamily(name, doc, labels=GPU_LABELS)
            for key, g in zip(gpu_keys, snap.gpus, strict=True):
                value = get(g)
                if value is not None:
                    counter.add_metric(key, value)
            yield counter
        extra = snap.enrichment
        names = list(extra.label_names) if extra is not None else []
        pod_keys = [
            [
                node, p.gpu, p.uuid, p.pod_uid, p.container,
                # A pod the API does not know keeps its pod_uid series, unnamed.
                *(extra.pod_labels.get(p.pod_uid, extra.unknown_pod) if extra is not None else ()),
            ]
            for p in snap.pods
        ]  # fmt: skip
        for name, doc, get_pod in _POD_GAUGES:
            gauge = GaugeMetricFamily(name, doc, labels=POD_LABELS + names)
            for key, p in zip(pod_keys, snap.pods, strict=True):
                value = get_pod(p)
                if value is not None:
                    gauge.add_metric(key, value)
            yield gauge
        if extra is not None:
            yield from _kubernetes(node, extra)
        yield from _health(snap)


def _kubernetes(node: str, extra: Enrichment) -> Iterator[Metric]:
    names = list(extra.label_names)
    allocated = GaugeMetricFamily(
        "guardian_pod_gpu_allocated",
        'GPUs the kubelet allocated to the pod\'s container (1 per GPU; a count with uuid="" '
        "when only pod limits are known), including pods that run no GPU process.",
        labels=["node", "gpu", "uuid", "container", "resource", *names],
    )
    for a in extra.allocations:
        allocated.add_metric([node, a.gpu, a.uuid, a.container, a.resource, *a.labels], a.value)
    yield allocated
    unallocated = GaugeMetricFamily(
        "guardian_pod_gpu_unallocated_use",
        "1: the pod's process uses a GPU that is not allocated to the pod.",
        labels=POD_LABELS + names,
    )
    for u in extra.unallocated_use:
        unallocated.add_metric([node, u.gpu, u.uuid, u.pod_uid, u.container, *u.labels], 1)
    yield unallocated
    yield GaugeMetricFamily(
        "guardian_exporter_kube_up",
        "1 if the Kubernetes API answered the exporter's last pod list or watch.",
        value=int(bool(extra.kube_up)),
    )


def _health(snap: Snapshot) -> Iterator[Metric]:
    h = snap.health
    yield GaugeMetricFamily(
        "guardian_exporter_nvml_up",
        "1 if the GPU backend is initialised and readable.",
        value=int(h.nvml_up),
    )
    stale = GaugeMetricFamily(
        "guardian_exporter_snapshot_stale",
        "1 if the last collection did not finish in time and these are the previous values.",
        value=int(h.stale),
    )
    yield stale
    last = GaugeMetricFamily(
        "guardian_exporter_last_success_timestamp_seconds",
        "When the last collection cycle succeeded.",
    )
    if h.last_success_timestamp_seconds is not None:
        last.add_metric([], h.last_success_timestamp_seconds)
    yield last
    durations = GaugeMetricFamily(
        "guardian_exporter_collect_duration_seconds",
        "Wall time of the last collection, per stage.",
        labels=["stage"],
    )
    for stage, seconds in h.stage_seconds:
        durations.add_metric([stage], seconds)
    yield durations
    errors = CounterMetricFamily(
        "guardian_exporter_errors", "Errors met while collecting.", labels=["op", "kind"]
    )
    for e in h.errors:
        errors.add_metric([e.op, e.kind], e.count)
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
