"""A GPU fleet as GPU Guardian's exporter reports it (docs/exporter.md), scraped into
Prometheus with the target labels our PodMonitor gives (job, instance; the exporter
sets node and cluster), plus kube-state-metrics' node info and the platform series.

8 GPUs a node, about 80 % allocated. The mix makes every alert of the guardian pack
fire somewhere, next to its quiet edge cases: idle GPUs (by both activity sources,
one, or neither), a burst only the busy counter saw, one busy sample in the window,
GPUs that went idle or changed hands recently, memory under-use and a memory peak,
time-sliced GPUs shared by busy and idle pods (or pods running nothing), MIG
instances, pods holding a GPU with no process, pods using a GPU they were not
allocated, and per-node pipeline faults (NVML down, scrapes failing, vanished
exporters and removed nodes, a frozen exporter, lost samples, renamed or missing pod
labels, allocations without a GPU id).

Beside the raw series, the exporter's idle facts (issue #33, fleet_facts.py), derived from
the same device states so that the window-based pack and the shipped one decide alike:
observed since the fleet's start, last active and the utilization peak over the idle
window from the activity, the memory peak over 1 h, the last process from the pods' and
host processes, and per pod and device its last process and idle-since. An idle pod's
processes show no SM use (0), a busy pod's always some.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import fleet_platform
from fleet_core import Fleet, Segment, Series, Timeline, gpu_uuid, label_text
from fleet_facts import FactWriter, spans
from fleet_faults import apply_fault
from fleet_pods import JOB, MIG_TOTAL, TOTAL, PodSeries
from fleet_shapes import BUSY, IDLE, clip, const, counter, pattern, timestamps

MODEL = "NVIDIA H100 80GB HBM3"
DRIVER = "550.54.15"
MIG_MEMORY_FLOOR = 64 << 20  # the exporter's --mig-memory-floor
NODE_FAULTS = (
    "nvml_down",
    "scrape_failing",
    "vanished",
    "removed",
    "frozen",
    "gap",
    "exported_pod",
    "missing_pod",
    "no_uuid",
    "no_group",
)
# Per allocated GPU (weights), see module doc.
GPU_KINDS = (
    ("busy", 50),
    ("idle", 10),
    ("idle_gauge_only", 2),
    ("idle_counter_only", 1),
    ("burst_counter", 2),
    ("busy_sample", 2),
    ("went_idle", 2),
    ("new_holder", 2),
    ("mem_low", 8),
    ("mem_peak", 2),
    ("mem_new_holder", 1),
    ("idle_mem_low", 3),
    ("no_process", 3),
    ("shared_mixed", 4),
    ("shared_idle", 2),
    ("shared_no_process", 1),
    ("mig", 4),
)


@dataclass
class Node:
    index: int
    name: str
    cluster: str
    instance: str
    clock: int
    fault: str = ""

    @property
    def base(self) -> dict[str, str]:
        labels = {"cluster": self.cluster, "node": self.name, "job": JOB, "instance": self.instance}
        if self.fault == "exported_pod":  # scraped without our relabelling: target labels stay
            labels |= {
                "pod": "gpu-guardian-exporter-x7k2p",
                "namespace": "gpu-guardian",
                "container": "exporter",
            }
        return labels


class GuardianFleet(PodSeries):
    def __init__(
        self, gpus: int, timeline: Timeline, seed: int = 21, idle_window_s: int = 1800
    ) -> None:
        self.t = timeline
        self.facts = FactWriter(timeline, idle_window_s, self._add)
        self.rng = random.Random(seed)
        self.fleet = Fleet()
        self.node_series: list[Series] = []
        self.nodes = [self._node(i) for i in range(max(1, gpus // 8))]
        per_fault = max(1, round(len(self.nodes) * 0.004))
        faulty = self.rng.sample(
            self.nodes[1:], min(len(self.nodes) - 1, per_fault * len(NODE_FAULTS))
        )
        for k, node in enumerate(faulty):
            node.fault = NODE_FAULTS[k % len(NODE_FAULTS)]
        self.kinds = [k for k, _ in GPU_KINDS]
        self.weights = [w for _, w in GPU_KINDS]

    def _node(self, i: int) -> Node:
        ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}:9400"
        cluster = "gpu-east" if i % 2 == 0 else "gpu-west"
        return Node(i, f"gpu-node-{i:05d}", cluster, ip, self.t.clock_of(i))

    def build(self) -> Fleet:
        for node in self.nodes:
            self.node_series = []
            self._build_node(node)
            apply_fault(node, self.node_series, self.t)
        fleet_platform.add_platform(self.fleet, self.t)
        return self.fleet

    # ------------------------------------------------------------------ helpers
    def _add(
        self, name: str, labels: dict[str, str], node: Node, segments: list[Segment]
    ) -> Series:
        series = Series(name, label_text(labels), node.clock, segments)
        self.fleet.add(series)
        self.node_series.append(series)
        return series

    def _all(self) -> tuple[int, int]:
        return 0, self.t.steps

    # ------------------------------------------------------------------ node
    def _build_node(self, node: Node) -> None:
        t, b = self.t, node.base
        lo, hi = self._all()
        self._add("up", b, node, const("1", lo, hi))
        self._add("guardian_exporter_nvml_up", b, node, const("1", lo, hi))
        self._add("guardian_exporter_snapshot_stale", b, node, const("0", lo, hi))
        self._add("guardian_exporter_kube_up", b, node, const("1", lo, hi))
        self._add(
            "guardian_exporter_last_success_timestamp_seconds",
            b,
            node,
            timestamps(t, node.clock, lo, hi, lag=2.0),
        )
        for stage, values in (
            ("nvml", ("0.031", "0.029")),
            ("attribution", ("0.004",)),
            ("render", ("0.002",)),
        ):
            self._add(
                "guardian_exporter_collect_duration_seconds",
                b | {"stage": stage},
                node,
                pattern(values, lo, hi),
            )
        self._add(
            "guardian_exporter_errors_total",
            b | {"op": "energy", "kind": "not_supported"},
            node,
            const("8", lo, hi),
        )
        ksm = {"cluster": node.cluster, "job": "kube-state-metrics", "instance": "10.96.0.20:8080"}
        info = ksm | {
            "node": node.name,
            "kubelet_version": "v1.30.2",
            "container_runtime_version": "containerd://1.7.18",
        }
        self.fleet.add(Series("kube_node_info", label_text(info), node.clock, const("1", lo, hi)))
        if node.fault == "removed":
            clip(self.fleet.families["kube_node_info"][-1], t.at(-20))
        for g in range(8):
            uuid = "GPU-" + gpu_uuid(f"{node.name}/{g}")
            if self.rng.random() >= 0.8:
                self._free_gpu(node, g, uuid)
            else:
                kind = self.rng.choices(self.kinds, self.weights)[0]
                self._allocated_gpu(node, g, uuid, kind)

    def _device(self, node: Node, g: str, uuid: str, mig: str) -> dict[str, str]:
        labels = node.base | {"gpu": g, "uuid": uuid}
        info = labels | {"model": MODEL, "driver_version": DRIVER, "mig": mig}
        self._add("guardian_gpu_info", info, node, const("1", *self._all()))
        return labels

    def _gpu_common(
        self, node: Node, labels: dict[str, str], used: list[Segment], total: int = TOTAL
    ) -> None:
        lo, hi = self._all()
        self._add("guardian_gpu_memory_used_bytes", labels, node, used)
        self._add("guardian_gpu_memory_total_bytes", labels, node, const(str(total), lo, hi))
        self._add(
            "guardian_gpu_temperature_celsius", labels, node, pattern(("41", "42", "43"), lo, hi)
        )
        self._add(
            "guardian_gpu_power_watts", labels, node, pattern(("212.5", "230.1", "198.4"), lo, hi)
        )
        self._add(
            "guardian_gpu_energy_joules_total", labels, node, counter([(lo, hi, 3200.0)], 1.2e7)
        )

    def _activity(
        self, node: Node, labels: dict[str, str], util: list[Segment], busy: list[Segment] | None
    ) -> None:
        if util:
            self._add("guardian_gpu_utilization_ratio", labels, node, util)
        if busy is not None:
            self._add("guardian_gpu_busy_seconds_total", labels, node, busy)

    def _free_gpu(self, node: Node, g: int, uuid: str) -> None:
        lo, hi = self._all()
        labels = self._device(node, str(g), uuid, "disabled")
        host_use = self.rng.random() < 0.05
        unallocated_use = not host_use and self.rng.random() < 0.05
        busy = host_use or unallocated_use
        self._activity(
            node,
            labels,
            pattern(BUSY if busy else IDLE, lo, hi),
            counter([(lo, hi, 9.75 if busy else 0.15)], 5000.0),
        )
        used = const(str(TOTAL // 2 if busy else 536870912), lo, hi)
        self._gpu_common(node, labels, used)
        activity = spans(pattern(BUSY if busy else IDLE, lo, hi))
        activity += spans(counter([(lo, hi, 9.75 if busy else 0.15)]), self.t.step)
        self.facts.device(node, labels, activity, spans(used), [(lo, hi)] if busy else [])
        self._add(
            "guardian_gpu_unattributed_processes",
            labels,
            node,
            const("1" if host_use else "0", lo, hi),
        )
        self._add(
            "guardian_gpu_unattributed_memory_used_bytes",
            labels,
            node,
            const(str(TOTAL // 2) if host_use else "0", lo, hi),
        )
        if unallocated_use:
            pod = self._pod_identity(node, f"{g}-rogue")
            self._pod_series(node, labels, pod, busy=True, lo=lo, hi=hi)
            self._pod_facts(node, labels, pod, (lo, hi), busy=True)
            self._add(
                "guardian_pod_gpu_unallocated_use",
                self._pod_labels(node, labels, pod),
                node,
                const("1", lo, hi),
            )

    # ------------------------------------------------------------------ allocated GPUs
    def _allocated_gpu(self, node: Node, g: int, uuid: str, kind: str) -> None:
        if kind == "mig":
            self._mig_gpu(node, g, uuid)
            return
        t = self.t
        lo, hi = self._all()
        labels = self._device(node, str(g), uuid, "disabled")
        busy_kinds = {
            "busy",
            "mem_low",
            "mem_peak",
            "mem_new_holder",
            "shared_mixed",
            "shared_no_process",
        }
        is_busy = kind in busy_kinds
        util = pattern(BUSY if is_busy else IDLE, lo, hi)
        busy: list[Segment] | None = counter([(lo, hi, 9.75 if is_busy else 0.15)], 5000.0)
        if kind == "idle_gauge_only":
            busy = None
        elif kind == "idle_counter_only":
            util = []
        elif kind == "burst_counter":
            s = t.at(-12)
            busy = counter([(lo, s, 0.15), (s, s + 4, 12.0), (s + 4, hi, 0.15)], 5000.0)
        elif kind == "busy_sample":
            s = t.at(-15)
            util = pattern(IDLE, lo, s) + const("0.8", s, s + 1) + pattern(IDLE, s + 1, hi)
            busy = counter([(lo, s, 0.15), (s, s + 1, 12.0), (s + 1, hi, 0.15)], 5000.0)
        elif kind == "went_idle":
            s = t.at(-20)
            util = pattern(BUSY, lo, s) + pattern(IDLE, s, hi)
            busy = counter([(lo, s, 9.75), (s, hi, 0.15)], 5000.0)
        self._activity(node, labels, util, busy)
        low = kind in {"mem_low", "mem_peak", "mem_new_holder", "idle_mem_low"}
        used = const(str(TOTAL * 8 // 100 if low else TOTAL * 6 // 10), lo, hi)
        if kind == "mem_peak":
            s = t.at(-40)
            used = const(str(TOTAL * 8 // 100), lo, s) + const(str(TOTAL // 2), s, s + 20)
            used += const(str(TOTAL * 8 // 100), s + 20, hi)
        elif kind == "no_process":
            used = const(str(TOTAL // 200), lo, hi)
        self._gpu_common(node, labels, used)
        self._add("guardian_gpu_unattributed_processes", labels, node, const("0", lo, hi))
        self._add("guardian_gpu_unattributed_memory_used_bytes", labels, node, const("0", lo, hi))
        start = {"new_holder": t.at(-20), "mem_new_holder": t.at(-40)}.get(kind, lo)
        activity = spans(util) + spans(busy or [], t.step)
        running = [] if kind == "no_process" else [(start, hi)]
        self.facts.device(node, labels, activity, spans(used), running)
        self._holders(node, labels, kind, is_busy, start)

    def _holders(
        self, node: Node, labels: dict[str, str], kind: str, is_busy: bool, start: int
    ) -> None:
        g, hi = labels["gpu"], self.t.steps
        resource = "nvidia.com/gpu"
        pods = [(f"{g}", is_busy)]
        if kind == "shared_mixed":
            pods = [(f"{g}a", True), (f"{g}b", False)]
            resource = "nvidia.com/gpu.shared"
        elif kind == "shared_idle":
            pods = [(f"{g}a", False), (f"{g}b", False), (f"{g}c", False)]
            resource = "nvidia.com/gpu.shared"
        elif kind == "shared_no_process":  # the busy pod's neighbour runs nothing
            pods = [(f"{g}a", True), (f"{g}b", False)]
            resource = "nvidia.com/gpu.shared"
        for suffix, pod_busy in pods:
            pod = self._pod_identity(node, suffix)
            self._allocation(node, labels, pod, resource, start)
            if kind == "shared_no_process" and not pod_busy:
                continue
            if kind != "no_process":
                busy = pod_busy or kind == "went_idle"
                self._pod_series(node, labels, pod, busy=busy, lo=start, hi=hi)
                self._pod_facts(node, labels, pod, (start, hi), busy=busy)

    def _mig_gpu(self, node: Node, g: int, uuid: str) -> None:
        lo, hi = self._all()
        labels = self._device(node, str(g), uuid, "enabled")
        used = const(str(TOTAL * 4 // 10), lo, hi)
        self._gpu_common(node, labels, used)
        self.facts.device(node, labels, None, spans(used), [])
        for k, (share, idle) in enumerate(((65, False), (1, True)), start=1):
            mig = "MIG-" + gpu_uuid(f"{uuid}/{k}")
            dev = self._device(node, f"{g}/{k}", mig, "instance")
            memory = MIG_TOTAL * share // 100
            self._add("guardian_gpu_memory_used_bytes", dev, node, const(str(memory), lo, hi))
            # On a MIG slice 64 MiB of memory or more counts as a process.
            running = [(lo, hi)] if not idle or memory >= MIG_MEMORY_FLOOR else []
            self.facts.device(node, dev, None, spans(const(str(memory), lo, hi)), running)
            self._add("guardian_gpu_memory_total_bytes", dev, node, const(str(MIG_TOTAL), lo, hi))
            pod = self._pod_identity(node, f"{g}m{k}")
            self._allocation(node, dev, pod, "nvidia.com/mig-3g.40gb", lo)
            if not idle:
                self._pod_series(node, dev, pod, busy=True, lo=lo, hi=hi, mig=True)
                self._pod_facts(node, dev, pod, (lo, hi), busy=True, mig=True)
