"""Build the immutable snapshot from one reading and the PID attribution. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.engine.utilization import (
    clamp_percent,
    integrate_busy,
    sm_percent_by_pid,
    summarize_process_samples,
)
from exporter.engine.vgpu import VgpuRatios
from exporter.model.attribution import NO_POD, CgroupIdentity
from exporter.model.readings import NodeReading, ProcessReading
from exporter.model.snapshot import ExporterHealth, GpuSeries, PodGpuSeries, Snapshot

PodKey = tuple[str, str, str]  # (device uuid, pod uid, container id)


@dataclass(frozen=True, slots=True)
class BuilderState:
    """What survives from one cycle to the next. Entries of vanished devices and pods go."""

    busy_seconds: Mapping[str, float] = field(default_factory=dict)
    last_sample_us: Mapping[str, int] = field(default_factory=dict)
    last_active: Mapping[PodKey, float] = field(default_factory=dict)
    # Per device: the driver's per-process sampling period as learnt so far, and when the
    # device was last read (the start of the next averaging window).
    process_period_us: Mapping[str, int] = field(default_factory=dict)
    read_at: Mapping[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _PodAccumulator:
    memory: int | None = 0
    sm_percent: float = 0.0
    processes: int = 0
    last_active_us: int | None = None


def _unique_processes(processes: tuple[ProcessReading, ...]) -> list[ProcessReading]:
    """A PID can be on the compute and the graphics list; count it once, keep its memory."""
    by_pid: dict[int, ProcessReading] = {}
    for p in processes:
        seen = by_pid.get(p.pid)
        if seen is None or (seen.used_memory_bytes or 0) < (p.used_memory_bytes or 0):
            by_pid[p.pid] = p
    return list(by_pid.values())


def _device_pods(
    processes: list[ProcessReading],
    identities: Mapping[int, CgroupIdentity],
    sm_by_pid: Mapping[int, float],
    active: Mapping[int, int],
) -> tuple[dict[tuple[str, str], _PodAccumulator], int | None, int]:
    pods: dict[tuple[str, str], _PodAccumulator] = {}
    unattributed_memory: int | None = 0
    unattributed = 0
    for proc in processes:
        ident = identities.get(proc.pid, NO_POD)
        if ident.pod_uid is None:
            unattributed += 1
            if unattributed_memory is not None and proc.used_memory_bytes is not None:
                unattributed_memory += proc.used_memory_bytes
            elif proc.used_memory_bytes is None:
                unattributed_memory = None
            continue
        acc = pods.setdefault((ident.pod_uid, ident.container_id or ""), _PodAccumulator())
        acc.processes += 1
        # Unknown memory on any process makes the pod's sum unknown, never an undercount.
        if acc.memory is not None and proc.used_memory_bytes is not None:
            acc.memory += proc.used_memory_bytes
        else:
            acc.memory = None
        acc.sm_percent += sm_by_pid.get(proc.pid, 0.0)
        ts = active.get(proc.pid)
        if ts is not None and (acc.last_active_us is None or ts > acc.last_active_us):
            acc.last_active_us = ts
    return pods, unattributed_memory, unattributed


def build_snapshot(
    reading: NodeReading,
    identities: Mapping[int, CgroupIdentity],
    state: BuilderState,
    *,
    node: str,
    ratios: VgpuRatios,
    taken_at: float,
    health: ExporterHealth,
    cluster: str = "",
) -> tuple[Snapshot, BuilderState]:
    gpus: list[GpuSeries] = []
    pods: list[PodGpuSeries] = []
    busy_state: dict[str, float] = {}
    sample_state: dict[str, int] = {}
    active_state: dict[PodKey, float] = {}
    period_state: dict[str, int] = {}
    read_at: dict[str, float] = {}

    for dev in reading.devices:
        busy: float | None = None
        if dev.util_samples is not None:
            added, last = integrate_busy(dev.util_samples, state.last_sample_us.get(dev.uuid))
            busy = state.busy_seconds.get(dev.uuid, 0.0) + added
            busy_state[dev.uuid] = busy
            if last is not None:
                sample_state[dev.uuid] = last

        summary = summarize_process_samples(dev.process_samples or ())
        known = state.process_period_us.get(dev.uuid)
        period = summary.min_gap_us if known is None else min(known, summary.min_gap_us or known)
        if period is not None:
            period_state[dev.uuid] = period
        previous = state.read_at.get(dev.uuid)
        window = None if previous is None else (taken_at - previous) * 1e6
        read_at[dev.uuid] = taken_at
        sm_by_pid = sm_percent_by_pid(summary, period, window)
        processes = _unique_processes(dev.processes)
        by_pod, unattributed_memory, unattributed = _device_pods(
            processes, identities, sm_by_pid, summary.last_active_us
        )
        gpus.append(
            GpuSeries(
                index=dev.index,
                uuid=dev.uuid,
                model=dev.model,
                mig=dev.mig,
                memory_used_bytes=dev.memory_used_bytes,
                memory_total_bytes=dev.memory_total_bytes,
                utilization_ratio=(
                    None
                    if dev.utilization_percent is None
                    else clamp_percent(dev.utilization_percent) / 100.0
                ),
                busy_seconds_total=busy,
                temperature_celsius=dev.temperature_celsius,
                power_watts=dev.power_watts,
                energy_joules_total=dev.energy_joules,
                unattributed_memory_used_bytes=unattributed_memory,
                unattributed_processes=unattributed,
            )
        )
        allocated = ratios.allocated_bytes(
            dev.memory_total_bytes, dev.uuid, dev.model, dev.parent_uuid
        )
        for (pod_uid, container_id), acc in sorted(by_pod.items()):
            key = (dev.uuid, pod_uid, container_id)
            last_active = state.last_active.get(key)
            if acc.last_active_us is not None:
                seen = acc.last_active_us / 1e6
                last_active = seen if last_active is None else max(last_active, seen)
            if last_active is not None:
                active_state[key] = last_active
            pods.append(
                PodGpuSeries(
                    gpu=dev.index,
                    uuid=dev.uuid,
                    pod_uid=pod_uid,
                    container_id=container_id,
                    memory_used_bytes=acc.memory,
                    sm_utilization_ratio=(
                        None
                        if dev.process_samples is None
                        else clamp_percent(acc.sm_percent) / 100.0
                    ),
                    processes=acc.processes,
                    last_active_timestamp_seconds=last_active,
                    vgpu_memory_allocated_bytes=allocated,
                )
            )

    snapshot = Snapshot(
        node=node,
        driver_version=reading.driver_version,
        taken_at=taken_at,
        gpus=tuple(gpus),
        pods=tuple(pods),
        health=health,
        cluster=cluster,
    )
    return snapshot, BuilderState(busy_state, sample_state, active_state, period_state, read_at)
