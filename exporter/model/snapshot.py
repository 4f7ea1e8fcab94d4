"""The immutable snapshot that one collection cycle produces and every scrape renders."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from exporter.model.enrichment import Enrichment
from exporter.model.readings import MigState

STAGES = ("nvml", "attribution", "render")


@dataclass(frozen=True, slots=True)
class GpuSeries:
    """Values for one physical GPU or MIG device. None means "omit the series"."""

    index: str
    uuid: str
    model: str
    mig: MigState
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    utilization_ratio: float | None
    busy_seconds_total: float | None
    temperature_celsius: float | None
    power_watts: float | None
    energy_joules_total: float | None
    unattributed_memory_used_bytes: int | None
    unattributed_processes: int
    # What idle rules read as one sample (exporter/engine/observation.py).
    last_active_timestamp_seconds: float | None = None
    observed_since_timestamp_seconds: float | None = None
    memory_used_peak_bytes: float | None = None
    utilization_peak_ratio: float | None = None
    last_process_timestamp_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class PodGpuSeries:
    """One pod's container on one GPU (or MIG device)."""

    gpu: str
    uuid: str
    pod_uid: str
    container_id: str  # from the cgroup; "" for a process at pod level (e.g. CRI-O's conmon)
    memory_used_bytes: int | None
    sm_utilization_ratio: float | None
    processes: int
    last_active_timestamp_seconds: float | None
    vgpu_memory_allocated_bytes: float | None
    observed_since_timestamp_seconds: float | None = None


class PodDeviceSeries(NamedTuple):
    """One pod on one device, whatever its containers: the share rules' facts. A tuple:
    one is made per pod and device every collection."""

    gpu: str
    uuid: str
    pod_uid: str
    last_process_timestamp_seconds: float
    idle_since_timestamp_seconds: float | None  # None: no per-process samples (MIG)


@dataclass(frozen=True, slots=True)
class ErrorCount:
    op: str
    kind: str
    count: int


@dataclass(frozen=True, slots=True)
class ExporterHealth:
    nvml_up: bool
    last_success_timestamp_seconds: float | None
    stage_seconds: tuple[tuple[str, float], ...]
    errors: tuple[ErrorCount, ...]
    # True when the last collection did not finish in time and this is the previous good data.
    stale: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    node: str
    driver_version: str
    taken_at: float
    gpus: tuple[GpuSeries, ...]
    pods: tuple[PodGpuSeries, ...]
    health: ExporterHealth
    # What Kubernetes adds (names, gpu_group, allocations); None when enrichment is off.
    enrichment: Enrichment | None = None
    cluster: str = ""  # --cluster-name: a label on every series when set
    # The ``window`` label of the peak series (--memory-peak-window, --activity-peak-window).
    memory_peak_window: str = "1h"
    activity_peak_window: str = "30m"
    pod_devices: tuple[PodDeviceSeries, ...] = ()

    def with_health(self, health: ExporterHealth) -> Snapshot:
        return dataclasses.replace(self, health=health)

    def with_enrichment(self, enrichment: Enrichment | None) -> Snapshot:
        return dataclasses.replace(self, enrichment=enrichment)


def empty_snapshot(
    node: str, health: ExporterHealth, taken_at: float, cluster: str = ""
) -> Snapshot:
    """What is served while NVML is down: health series only, no GPU series."""
    return Snapshot(
        node=node,
        driver_version="",
        taken_at=taken_at,
        gpus=(),
        pods=(),
        health=health,
        cluster=cluster,
    )
