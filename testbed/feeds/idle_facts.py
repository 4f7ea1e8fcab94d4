"""The idle facts GPU Guardian's exporter would have reported for a history of raw series.

The guardian rule pack reads facts the exporter keeps (docs/exporter.md, "Idle facts"):
since when it has read a device without a gap, its last activity, its last process, its
windowed peaks, and per pod and device the pod's last process and since when its processes
showed no SM use. A feed that builds a history from raw series (utilization, memory,
processes) adds the facts consistent with it with :func:`idle_facts`:

- a device is ``(cluster, node, uuid)`` as its samples carry them; a reading of it is any
  NVML-side sample with its uuid at a time (not the kubelet's allocation);
- a run of readings breaks on an exporter restart (``restarts``) or when readings are
  further apart than ``gap`` (3 x the device's shortest spacing by default): observation,
  peaks and the pod entries start again; the last activity and the last process are lost
  on a restart only (the exporter keeps them over a hung collection);
- last activity: the newest reading with utilization (or a process's SM use) above
  ``floor``; peaks: the maximum over the trailing window, once the whole window was
  observed; none of them on MIG but the memory peak;
- last process: the newest reading with unattributed or pod processes (MIG: or memory of
  ``mig_memory_floor`` or more); a pod's entry lives ``activity_window`` past its last
  process, and its idle-since (on devices with per-process samples, not MIG) is the
  newest SM use of its processes or the run's start.

Facts are samples at each reading's time. Pure: no clock, no I/O.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from guardian.adapters.openmetrics import Sample

OBSERVED_SINCE = "guardian_gpu_observed_since_timestamp_seconds"
LAST_ACTIVE = "guardian_gpu_last_active_timestamp_seconds"
UTILIZATION_PEAK = "guardian_gpu_utilization_peak_ratio"
MEMORY_PEAK = "guardian_gpu_memory_used_peak_bytes"
LAST_PROCESS = "guardian_gpu_last_process_timestamp_seconds"
POD_LAST_PROCESS = "guardian_pod_device_last_process_timestamp_seconds"
POD_IDLE_SINCE = "guardian_pod_device_idle_since_timestamp_seconds"
FACTS = frozenset(
    {OBSERVED_SINCE, LAST_ACTIVE, UTILIZATION_PEAK, MEMORY_PEAK, LAST_PROCESS}
    | {POD_LAST_PROCESS, POD_IDLE_SINCE}
)
ALLOCATED = "guardian_pod_gpu_allocated"
PROCESSES = "guardian_pod_gpu_processes"
# Series that are no reading of the device by NVML: the kubelet's allocation, and facts.
NOT_READINGS = FACTS | {ALLOCATED, "guardian_pod_vgpu_memory_allocated_bytes"}
DEVICE_LABELS = ("cluster", "node", "gpu", "uuid")
CONTAINER_LABELS = frozenset({"container", "container_id"})
MIB = 1024 * 1024

DeviceKey = tuple[str, str, str]  # cluster ("" without one), node, uuid
PodKey = tuple[str, str]  # namespace, pod


@dataclass(frozen=True)
class Restart:
    """The exporter of every device whose labels include ``selector`` restarted at ``at``
    (or lost NVML: the exporter drops its state either way)."""

    at: float
    selector: Mapping[str, str] = field(default_factory=dict)

    def applies(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.selector.items())


@dataclass(frozen=True)
class FactSetup:
    """The exporter's flags the facts depend on (the pack's values by default)."""

    activity_window: float = 1800.0
    memory_window: float = 3600.0
    floor: float = 0.05
    mig_memory_floor: float = 64 * MIB
    gap: float | None = None
    window_labels: tuple[str, str] = ("30m", "1h")  # activity, memory


@dataclass(frozen=True)
class _Series:
    """One raw series of a device in time order, for windowed maxima."""

    times: list[float]
    values: list[float]

    @classmethod
    def of(cls, values: Mapping[float, float]) -> _Series:
        ordered = sorted(values.items())
        return cls([t for t, _ in ordered], [v for _, v in ordered])

    def peak(self, since: float, at: float, window: float) -> float | None:
        """The maximum over (at - window, at] within the run, once the window was observed."""
        if at - since < window:
            return None
        lo = max(bisect_left(self.times, since), bisect_right(self.times, at - window))
        found = self.values[lo : bisect_right(self.times, at)]
        return max(found) if found else None


@dataclass
class _Pod:
    labels: dict[str, str]
    labelled: bool = False  # its labels are its processes series' (else a sibling's)
    processes: set[float] = field(default_factory=set)
    active: set[float] = field(default_factory=set)  # times its processes showed SM use

    @cached_property
    def active_times(self) -> list[float]:
        return sorted(self.active)

    def newest_active(self, at: float) -> float | None:
        """The newest SM use of its processes at or before ``at``."""
        i = bisect_right(self.active_times, at)
        return self.active_times[i - 1] if i else None


@dataclass
class _Device:
    labels: dict[str, str]
    times: set[float] = field(default_factory=set)
    utilization: dict[float, float] = field(default_factory=dict)
    memory: dict[float, float] = field(default_factory=dict)
    process_sm: dict[float, float] = field(default_factory=dict)  # peak process SM use
    processes: set[float] = field(default_factory=set)
    pods: dict[PodKey, _Pod] = field(default_factory=dict)

    @cached_property
    def utilization_series(self) -> _Series:
        return _Series.of(self.utilization)

    @cached_property
    def memory_series(self) -> _Series:
        return _Series.of(self.memory)

    @property
    def mig(self) -> bool:
        return self.labels["uuid"].startswith("MIG-")

    def pod(self, labels: Mapping[str, str], *, processes: bool = False) -> _Pod:
        """The pod of a pod series (by namespace and name); the processes series names it."""
        key = (labels.get("namespace", ""), labels.get("pod", ""))
        kept = {k: v for k, v in labels.items() if k not in CONTAINER_LABELS}
        pod = self.pods.get(key)
        if pod is None:
            pod = self.pods[key] = _Pod(kept)
        if processes and not pod.labelled:
            pod.labels, pod.labelled = kept, True
        return pod


def device_key(labels: Mapping[str, str]) -> DeviceKey:
    return (labels.get("cluster", ""), labels.get("node", ""), labels.get("uuid", ""))


def is_reading(sample: Sample) -> bool:
    """An NVML-side sample of the exporter about one device (not allocation, not a fact)."""
    return (
        bool(sample.labels.get("uuid"))
        and sample.name.startswith(("guardian_gpu_", "guardian_pod_gpu_"))
        and sample.name not in NOT_READINGS
    )


def _keep_max(values: dict[float, float], at: float, value: float) -> None:
    values[at] = max(value, values.get(at, value))


def _record(dev: _Device, sample: Sample) -> None:
    name, at, value, labels = sample.name, sample.timestamp, sample.value, sample.labels
    if name == "guardian_gpu_utilization_ratio":
        _keep_max(dev.utilization, at, value)
    elif name == "guardian_gpu_memory_used_bytes":
        _keep_max(dev.memory, at, value)
    elif name == "guardian_gpu_unattributed_processes" and value > 0:
        dev.processes.add(at)
    elif name == PROCESSES:
        pod = dev.pod(labels, processes=True)
        if value > 0:
            pod.processes.add(at)
            dev.processes.add(at)
    elif name == "guardian_pod_gpu_sm_utilization_ratio":
        _keep_max(dev.process_sm, at, value)
        if value > 0:
            dev.pod(labels).active.add(at)
    elif name == "guardian_pod_gpu_last_active_timestamp_seconds" and 0 < value <= at:
        dev.pod(labels).active.add(value)


def collect(samples: Iterable[Sample]) -> dict[DeviceKey, _Device]:
    """Every device's readings, by device."""
    devices: dict[DeviceKey, _Device] = {}
    for sample in samples:
        if not is_reading(sample):
            continue
        key = device_key(sample.labels)
        dev = devices.get(key)
        if dev is None:
            dev = devices[key] = _Device({})
        for name in DEVICE_LABELS:
            if name in sample.labels:
                dev.labels.setdefault(name, sample.labels[name])
        dev.times.add(sample.timestamp)
        _record(dev, sample)
    return devices


def _gap(times: Sequence[float], setup: FactSetup) -> float:
    if setup.gap is not None:
        return setup.gap
    spacings = [b - a for a, b in itertools.pairwise(times)]
    return 3 * min(spacings) if spacings else float("inf")


@dataclass
class _Run:
    """One device's state between readings, as the exporter carries it."""

    since: float = 0.0
    last_active: float | None = None
    last_process: float | None = None
    pod_last: dict[PodKey, float] = field(default_factory=dict)

    def restart(self, at: float, *, lost: bool) -> None:
        self.since, self.pod_last = at, {}
        if lost:
            self.last_active = self.last_process = None


def _advance(run: _Run, dev: _Device, at: float, setup: FactSetup) -> None:
    if not dev.mig:
        busy = max(dev.utilization.get(at, 0.0), dev.process_sm.get(at, 0.0))
        if busy > setup.floor:
            run.last_active = at
    in_use = at in dev.processes
    if dev.mig and dev.memory.get(at, 0.0) >= setup.mig_memory_floor:
        in_use = True
    if in_use:
        run.last_process = at
    for key, pod in dev.pods.items():
        if at in pod.processes:
            run.pod_last[key] = at
    run.pod_last = {
        k: last for k, last in run.pod_last.items() if at - last <= setup.activity_window
    }


def _device_facts(run: _Run, dev: _Device, at: float, setup: FactSetup) -> list[Sample]:
    labels = dev.labels
    out = [Sample(OBSERVED_SINCE, labels, at, run.since)]
    if run.last_active is not None and not dev.mig:
        out.append(Sample(LAST_ACTIVE, labels, at, run.last_active))
    if run.last_process is not None:
        out.append(Sample(LAST_PROCESS, labels, at, run.last_process))
    activity_label, memory_label = setup.window_labels
    peak = None if dev.mig else dev.utilization_series.peak(run.since, at, setup.activity_window)
    if peak is not None:
        out.append(Sample(UTILIZATION_PEAK, {**labels, "window": activity_label}, at, peak))
    peak = dev.memory_series.peak(run.since, at, setup.memory_window)
    if peak is not None:
        out.append(Sample(MEMORY_PEAK, {**labels, "window": memory_label}, at, peak))
    return out


def _pod_facts(run: _Run, dev: _Device, at: float) -> list[Sample]:
    out: list[Sample] = []
    samples = bool(dev.process_sm) and not dev.mig
    for key, last in sorted(run.pod_last.items()):
        pod = dev.pods[key]
        out.append(Sample(POD_LAST_PROCESS, pod.labels, at, last))
        if samples:
            active = pod.newest_active(at)
            idle_since = run.since if active is None else max(run.since, active)
            out.append(Sample(POD_IDLE_SINCE, pod.labels, at, idle_since))
    return out


def _facts_of(dev: _Device, restarts: Sequence[Restart], setup: FactSetup) -> list[Sample]:
    times = sorted(dev.times)
    gap = _gap(times, setup)
    mine = sorted(r.at for r in restarts if r.applies(dev.labels))
    run = _Run()
    out: list[Sample] = []
    previous: float | None = None
    for at in times:
        restarted = previous is not None and bisect_right(mine, at) > bisect_right(mine, previous)
        if previous is None or restarted or at - previous > gap:
            run.restart(at, lost=previous is None or restarted)
        _advance(run, dev, at, setup)
        out += _device_facts(run, dev, at, setup)
        out += _pod_facts(run, dev, at)
        previous = at
    return out


def idle_facts(
    samples: Iterable[Sample],
    *,
    restarts: Iterable[Restart] = (),
    setup: FactSetup | None = None,
) -> list[Sample]:
    """The fact samples the exporter would have reported for the raw ``samples``.

    ``restarts``: exporter restarts (the first reading at or after one starts a new run
    and forgets the last activity and process). ``setup``: the exporter's flags (the
    pack's values by default). Samples that are facts already are ignored.
    """
    pinned, setup = list(restarts), setup or FactSetup()
    out: list[Sample] = []
    for _key, dev in sorted(collect(samples).items()):
        out += _facts_of(dev, pinned, setup)
    return out


def holder_processes(samples: Iterable[Sample]) -> list[Sample]:
    """One process (``guardian_pod_gpu_processes`` 1) for every pod holding a device, at
    each reading of the device, on devices whose samples list no process at all.

    A feed that models utilization and allocation but not processes meant its pods to
    run on their GPUs (the window pack read such a device's processes as unknown, never
    as "no process"); this says so in the exporter's terms.
    """
    given = list(samples)
    listed = {
        device_key(s.labels)
        for s in given
        if s.name in (PROCESSES, "guardian_gpu_unattributed_processes")
    }
    readings = {(device_key(s.labels), s.timestamp) for s in given if is_reading(s)}
    out: dict[tuple[tuple[tuple[str, str], ...], float], Sample] = {}
    for s in given:
        key = device_key(s.labels)
        if s.name != ALLOCATED or s.value != 1 or key in listed:
            continue
        if (key, s.timestamp) in readings:
            labels = {k: v for k, v in s.labels.items() if k != "resource"}
            out[(tuple(sorted(labels.items())), s.timestamp)] = Sample(
                PROCESSES, labels, s.timestamp, 1.0
            )
    return list(out.values())


def with_idle_facts(
    samples: Iterable[Sample],
    *,
    restarts: Iterable[Restart] = (),
    setup: FactSetup | None = None,
) -> list[Sample]:
    """``samples``, the holders' processes where they list none (:func:`holder_processes`),
    and the facts of it all (:func:`idle_facts`; ``setup``: the pack's values by default)."""
    given = list(samples)
    given += holder_processes(given)
    return given + idle_facts(given, restarts=restarts, setup=setup)


def latest(facts: Iterable[Sample], at: float) -> list[Sample]:
    """The samples at ``at``: what a scrape at that time reads."""
    return [s for s in facts if s.timestamp == at]


__all__ = [
    "FACTS",
    "FactSetup",
    "Restart",
    "holder_processes",
    "idle_facts",
    "latest",
    "with_idle_facts",
]
