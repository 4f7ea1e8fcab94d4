"""The simulated GPU backend: a scenario evaluated against an injected clock.

Given the same scenario and the same sequence of clock readings it returns the same readings.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

from exporter.model.errors import BackendUnavailable
from exporter.model.readings import (
    DeviceReading,
    MigState,
    NodeReading,
    ProcessReading,
    ProcessUtilSample,
    UtilSample,
)
from testbed.node.cgroups import NO_POD_PATH, cgroup_file_text, pod_cgroup_path
from testbed.node.scenario import FaultKind, Field_, Gpu, Process, Scenario

logger = logging.getLogger(__name__)

# The driver keeps a short ring of samples; a reader that comes back late loses the oldest.
RING_SAMPLES = 120


class SimulatedBackend:
    name = "simulated"

    def __init__(
        self, scenario: Scenario, clock: Callable[[], float], epoch: float | None = None
    ) -> None:
        self._scenario = scenario
        self._clock = clock
        self._epoch = clock() if epoch is None else epoch
        self._open = False
        self._interrupt = threading.Event()
        self._last_tick: dict[str, int] = {}
        self._energy_j: dict[str, float] = {}
        self._by_device: dict[str, list[Process]] = {}
        for proc in scenario.processes:
            self._by_device.setdefault(proc.gpu, []).append(proc)

    def _now(self) -> float:
        return self._clock() - self._epoch

    def _fault(self, kind: FaultKind, t: float) -> bool:
        return any(f.kind is kind and f.active_at(t) for f in self._scenario.faults)

    def open(self) -> None:
        if self._fault(FaultKind.NVML_INIT_FAILURE, self._now()):
            raise BackendUnavailable(
                "simulated NVML init failure (Driver Not Loaded)",
                op="init",
                kind="driver_not_loaded",
            )
        self._interrupt.clear()
        self._open = True

    def close(self) -> None:
        self._open = False
        self._interrupt.set()  # release a read that is hanging in a simulated hung call
        self._last_tick.clear()

    def read(self) -> NodeReading:
        if not self._open:
            raise BackendUnavailable("NVML is not initialised", op="read", kind="uninitialized")
        t = self._now()
        hang = [
            f for f in self._scenario.faults if f.kind is FaultKind.HUNG_CALL and f.active_at(t)
        ]
        if hang:
            logger.debug("simulated hung call for %s s", hang[0].hang_seconds)
            self._interrupt.wait(hang[0].hang_seconds)
        for fault in self._scenario.faults:
            if fault.kind is FaultKind.GPU_LOST and fault.active_at(t):
                raise BackendUnavailable(
                    f"GPU is lost: {fault.gpu or 'all'}", op="read", kind="gpu_is_lost"
                )
        devices: list[DeviceReading] = []
        for index, gpu in enumerate(self._scenario.gpus):
            devices.extend(self._read_gpu(index, gpu, t))
        return NodeReading(driver_version=self._scenario.driver_version, devices=tuple(devices))

    def _ticks(self, uuid: str, t: float) -> range:
        """Sample ticks (multiples of the sample period) not returned before."""
        period = self._scenario.sample_period_seconds
        now_tick = math.floor(t / period)
        first = max(self._last_tick.get(uuid, now_tick - RING_SAMPLES), now_tick - RING_SAMPLES)
        self._last_tick[uuid] = now_tick
        return range(first + 1, now_tick + 1)

    def _read_gpu(self, index: int, gpu: Gpu, t: float) -> list[DeviceReading]:
        off = set(gpu.unsupported)
        if gpu.mig_devices:
            out: list[DeviceReading] = []
            used_total = 0
            for slot, mig in enumerate(gpu.mig_devices):
                procs = self._alive(mig.uuid, t)
                used = sum(p.memory or 0 for p in procs)
                used_total += used
                out.append(
                    DeviceReading(
                        index=f"{index}/{slot}",
                        uuid=mig.uuid,
                        model=f"{gpu.model} MIG {mig.profile}",
                        mig=MigState.INSTANCE,
                        parent_uuid=gpu.uuid,
                        memory_used_bytes=used,
                        memory_total_bytes=mig.memory_total,
                        processes=tuple(ProcessReading(p.pid, p.memory, p.kind) for p in procs),
                        # NVML has no per-process or device utilization on MIG devices.
                        process_samples=None,
                    )
                )
            parent = DeviceReading(
                index=str(index),
                uuid=gpu.uuid,
                model=gpu.model,
                mig=MigState.ENABLED,
                memory_used_bytes=None if Field_.MEMORY in off else used_total,
                memory_total_bytes=None if Field_.MEMORY in off else gpu.memory_total,
                temperature_celsius=None if Field_.TEMPERATURE in off else gpu.temperature_celsius,
                power_watts=None if Field_.POWER in off else gpu.idle_power_watts,
            )
            return [parent, *out]

        procs = self._alive(gpu.uuid, t)
        util = min(100.0, sum(p.sm_at(t) for p in procs))
        period = self._scenario.sample_period_seconds
        samples: list[UtilSample] = []
        proc_samples: list[ProcessUtilSample] = []
        energy = self._energy_j.get(gpu.uuid, 0.0)
        for tick in self._ticks(gpu.uuid, t):
            at = tick * period
            ts_us = round((self._epoch + at) * 1e6)
            tick_util = 0.0
            for p in procs:
                sm = p.sm_at(at) if p.alive_at(at) else 0.0
                tick_util += sm
                if sm > 0:
                    proc_samples.append(ProcessUtilSample(p.pid, ts_us, sm))
            tick_util = min(100.0, tick_util)
            samples.append(UtilSample(ts_us, tick_util))
            energy += self._power(gpu, tick_util) * period
        self._energy_j[gpu.uuid] = energy
        known = [p.memory for p in procs if p.memory is not None]
        return [
            DeviceReading(
                index=str(index),
                uuid=gpu.uuid,
                model=gpu.model,
                memory_used_bytes=None
                if Field_.MEMORY in off
                else gpu.memory_overhead + sum(known),
                memory_total_bytes=None if Field_.MEMORY in off else gpu.memory_total,
                utilization_percent=None if Field_.UTILIZATION in off else util,
                temperature_celsius=(
                    None if Field_.TEMPERATURE in off else gpu.temperature_celsius + 0.3 * util
                ),
                power_watts=None if Field_.POWER in off else self._power(gpu, util),
                energy_joules=None if Field_.ENERGY in off else energy,
                util_samples=None if Field_.SAMPLES in off else tuple(samples),
                processes=tuple(ProcessReading(p.pid, p.memory, p.kind) for p in procs),
                process_samples=(
                    None if Field_.PROCESS_UTILIZATION in off else tuple(proc_samples)
                ),
            )
        ]

    @staticmethod
    def _power(gpu: Gpu, util: float) -> float:
        return gpu.idle_power_watts + (gpu.max_power_watts - gpu.idle_power_watts) * util / 100

    def _alive(self, device_uuid: str, t: float) -> list[Process]:
        return [p for p in self._by_device.get(device_uuid, ()) if p.alive_at(t)]


class ScenarioCgroups:
    """Cgroup files for the scenario's processes, laid out per the scenario's node settings."""

    def __init__(self, scenario: Scenario) -> None:
        node = scenario.node
        self._text: dict[int, str] = {}
        for p in scenario.processes:
            if p.pod_uid is None:
                path = NO_POD_PATH
            else:
                path = pod_cgroup_path(
                    p.pod_uid,
                    p.container_id,
                    driver=node.cgroup_driver,
                    runtime=node.runtime,
                    qos=p.qos,
                )
            self._text[p.pid] = cgroup_file_text(path, node.cgroup_version)

    def read_cgroup(self, pid: int) -> str | None:
        return self._text.get(pid)
