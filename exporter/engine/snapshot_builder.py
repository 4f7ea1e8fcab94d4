"""Build the immutable snapshot from one reading and the PID attribution. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.engine.observation import DeviceObservation, ObservationSetup, observe_device
from exporter.engine.pod_device import (
    DeviceRun,
    PodDeviceState,
    carry_pod_devices,
    idle_since,
)
from exporter.engine.utilization import (
    ProcessSummary,
    clamp_percent,
    integrate_busy,
    sm_percent_by_pid,
    summarize_process_samples,
)
from exporter.engine.vgpu import VgpuRatios
from exporter.model.attribution import NO_POD, CgroupIdentity
from exporter.model.readings import DeviceReading, NodeReading, ProcessReading
from exporter.model.snapshot import (
    ExporterHealth,
    GpuSeries,
    PodDeviceSeries,
    PodGpuSeries,
    Snapshot,
)
from guardian_common.durations import format_duration

PodKey = tuple[str, str, str]  # (device uuid, pod uid, container id)


@dataclass(frozen=True, slots=True)
class BuilderState:
    """What survives from one cycle to the next: only the devices and pods read in it, so
    entries of vanished devices and pods go. A cycle fills a fresh one for the next; a state
    handed on is never written again."""

    busy_seconds: dict[str, float] = field(default_factory=dict)
    last_sample_us: dict[str, int] = field(default_factory=dict)
    last_active: dict[PodKey, float] = field(default_factory=dict)
    # Per device: the driver's per-process sampling period as learnt so far, and when the
    # device was last read (the start of the next averaging window).
    process_period_us: dict[str, int] = field(default_factory=dict)
    read_at: dict[str, float] = field(default_factory=dict)
    devices: dict[str, DeviceObservation] = field(default_factory=dict)
    pod_since: dict[PodKey, float] = field(default_factory=dict)
    # device uuid -> pod uid -> that pod's facts on the device (exporter/engine/pod_device.py)
    pod_devices: dict[str, dict[str, PodDeviceState]] = field(default_factory=dict)


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


@dataclass(frozen=True, slots=True)
class SnapshotSetup:
    """What every snapshot of this node is built with."""

    node: str
    ratios: VgpuRatios
    cluster: str = ""  # --cluster-name: a label on every series when set
    observation: ObservationSetup = field(default_factory=ObservationSetup)


@dataclass(frozen=True, slots=True)
class _Cycle:
    """One collection: the state it starts from, the one it builds, and its time."""

    state: BuilderState
    nxt: BuilderState  # the state being filled for the next cycle
    setup: ObservationSetup
    taken_at: float

    def fresh(self, uuid: str) -> bool:
        """The device was not read by the previous collection within the gap bound: what
        is observed of it starts again now."""
        previous = self.state.read_at.get(uuid)
        return previous is None or self.taken_at - previous > self.setup.gap_seconds


def _busy_seconds(dev: DeviceReading, state: BuilderState, nxt: BuilderState) -> float | None:
    """The device's busy time so far, integrated from its utilization samples."""
    if dev.util_samples is None:
        return None
    added, last = integrate_busy(dev.util_samples, state.last_sample_us.get(dev.uuid))
    busy = state.busy_seconds.get(dev.uuid, 0.0) + added
    nxt.busy_seconds[dev.uuid] = busy
    if last is not None:
        nxt.last_sample_us[dev.uuid] = last
    return busy


def _process_activity(dev: DeviceReading, cycle: _Cycle) -> tuple[ProcessSummary, dict[int, float]]:
    """The device's per-process samples summarised, and each PID's SM percent averaged
    over the time since the device was last read."""
    state, nxt, taken_at = cycle.state, cycle.nxt, cycle.taken_at
    floor = cycle.setup.activity_floor * 100.0
    summary = summarize_process_samples(dev.process_samples or (), floor)
    known = state.process_period_us.get(dev.uuid)
    period = summary.min_gap_us if known is None else min(known, summary.min_gap_us or known)
    if period is not None:
        nxt.process_period_us[dev.uuid] = period
    previous = state.read_at.get(dev.uuid)
    window = None if previous is None else (taken_at - previous) * 1e6
    nxt.read_at[dev.uuid] = taken_at
    return summary, sm_percent_by_pid(summary, period, window)


def _gpu_series(
    dev: DeviceReading,
    busy: float | None,
    unattributed: tuple[int | None, int],
    obs: DeviceObservation,
    cycle: _Cycle,
) -> GpuSeries:
    now, setup = cycle.taken_at, cycle.setup
    return GpuSeries(
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
        unattributed_memory_used_bytes=unattributed[0],
        unattributed_processes=unattributed[1],
        last_active_timestamp_seconds=obs.last_active,
        observed_since_timestamp_seconds=obs.since,
        last_process_timestamp_seconds=obs.last_process,
        memory_used_peak_bytes=(
            None if obs.memory is None else obs.memory.peak(now, setup.memory_peak_window)
        ),
        utilization_peak_ratio=(
            None if obs.activity is None else obs.activity.peak(now, setup.activity_peak_window)
        ),
    )


def _pod_series(
    dev: DeviceReading,
    by_pod: Mapping[tuple[str, str], _PodAccumulator],
    allocated: float | None,
    cycle: _Cycle,
    fresh: bool,
) -> list[PodGpuSeries]:
    """The device's pods in order; each one's last activity and observation start carry
    over to ``nxt``; ``fresh`` (a gap on the device) starts every observation again."""
    state, nxt = cycle.state, cycle.nxt
    out: list[PodGpuSeries] = []
    for (pod_uid, container_id), acc in sorted(by_pod.items()):
        key = (dev.uuid, pod_uid, container_id)
        since = None if fresh else state.pod_since.get(key)
        nxt.pod_since[key] = since = cycle.taken_at if since is None else since
        last_active = state.last_active.get(key)
        if acc.last_active_us is not None:
            seen = acc.last_active_us / 1e6
            last_active = seen if last_active is None else max(last_active, seen)
        if last_active is not None:
            nxt.last_active[key] = last_active
        out.append(
            PodGpuSeries(
                gpu=dev.index,
                uuid=dev.uuid,
                pod_uid=pod_uid,
                container_id=container_id,
                memory_used_bytes=acc.memory,
                sm_utilization_ratio=(
                    None if dev.process_samples is None else clamp_percent(acc.sm_percent) / 100.0
                ),
                processes=acc.processes,
                last_active_timestamp_seconds=last_active,
                vgpu_memory_allocated_bytes=allocated,
                observed_since_timestamp_seconds=since,
            )
        )
    return out


def _pod_device_series(
    dev: DeviceReading,
    by_pod: Mapping[tuple[str, str], _PodAccumulator],
    obs: DeviceObservation,
    cycle: _Cycle,
    fresh: bool,
) -> list[PodDeviceSeries]:
    """Each pod's facts on the device, whatever its containers; they carry over to ``nxt``."""
    newest: dict[str, int | None] = {}
    for (pod_uid, _), acc in by_pod.items():
        seen, ts = newest.get(pod_uid), acc.last_active_us
        newest[pod_uid] = ts if seen is None or (ts is not None and ts > seen) else seen
    run = DeviceRun(cycle.taken_at, fresh, cycle.setup.activity_peak_window)
    states = carry_pod_devices(run, newest, cycle.state.pod_devices.get(dev.uuid, {}))
    if states:
        cycle.nxt.pod_devices[dev.uuid] = states
    samples = dev.process_samples is not None
    gpu, uuid, since = dev.index, dev.uuid, obs.since
    return [
        PodDeviceSeries(
            gpu, uuid, uid, state.last_process, idle_since(state, since) if samples else None
        )
        for uid, state in sorted(states.items())
    ]


def build_snapshot(
    reading: NodeReading,
    identities: Mapping[int, CgroupIdentity],
    state: BuilderState,
    setup: SnapshotSetup,
    *,
    taken_at: float,
    health: ExporterHealth,
) -> tuple[Snapshot, BuilderState]:
    gpus: list[GpuSeries] = []
    pods: list[PodGpuSeries] = []
    pod_devices: list[PodDeviceSeries] = []
    nxt = BuilderState()
    cycle = _Cycle(state, nxt, setup.observation, taken_at)
    for dev in reading.devices:
        fresh = cycle.fresh(dev.uuid)
        busy = _busy_seconds(dev, state, nxt)
        summary, sm_by_pid = _process_activity(dev, cycle)
        processes = _unique_processes(dev.processes)
        by_pod, unattributed_memory, unattributed = _device_pods(
            processes, identities, sm_by_pid, summary.last_active_us
        )
        obs = nxt.devices[dev.uuid] = observe_device(
            dev, state.devices.get(dev.uuid), fresh, summary.active_us, setup.observation, taken_at
        )
        gpus.append(_gpu_series(dev, busy, (unattributed_memory, unattributed), obs, cycle))
        allocated = setup.ratios.allocated_bytes(
            dev.memory_total_bytes, dev.uuid, dev.model, dev.parent_uuid
        )
        pods.extend(_pod_series(dev, by_pod, allocated, cycle, fresh))
        pod_devices.extend(_pod_device_series(dev, by_pod, obs, cycle, fresh))
    snapshot = Snapshot(
        node=setup.node,
        driver_version=reading.driver_version,
        taken_at=taken_at,
        gpus=tuple(gpus),
        pods=tuple(pods),
        health=health,
        cluster=setup.cluster,
        memory_peak_window=format_duration(setup.observation.memory_peak_window),
        activity_peak_window=format_duration(setup.observation.activity_peak_window),
        pod_devices=tuple(pod_devices),
    )
    return snapshot, nxt
