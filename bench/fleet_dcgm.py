"""A GPU fleet as NVIDIA dcgm-exporter reports it (its default counters), scraped every
30 s with the config ``guardian dcgm-config`` generates: ``honor_labels: true``, the
target's ``node``, pod labels on allocated GPUs (``namespace``, ``pod``, ``container``,
the allowlisted ``team``) and ``gpu_group`` copied from it; plus kube-state-metrics'
node info, GPU requests and pod phases, and the platform series.

The mix (see fleet_guardian.py) has dcgm's own cases: GPUs without the profiling metric
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE``), MIG instances (``GPU_I_ID``, no ``GPU_UTIL``; some
without the profiling metric either), GPUs with no process (``FB_USED`` near 0), GPUs
two pods share under ``--kubernetes-virtual-gpus`` (a ``vgpu`` label),
``FB_RESERVED`` absent, ``Hostname`` on half the nodes and ``hostname`` on the others,
and per-node faults: scrapes failing, no GPU series, vanished and removed nodes, frozen
readings, lost samples, a scrape without ``honor_labels``, ``pod`` without ``namespace``,
no pod mapping at all (time-slicing), ``gpu_group`` relabelling missing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import fleet_platform
from fleet_core import Fleet, Segment, Series, Timeline, gpu_uuid, hex_id, label_text
from fleet_shapes import BUSY, BUSY_PCT, IDLE, IDLE_PCT, clip, const, counter, pattern, punch

JOB = "dcgm-exporter"
MODEL = "NVIDIA H100 80GB HBM3"
TOTAL_MIB = 81559
NODE_FAULTS = (
    "scrape_failing",
    "no_gpu_metrics",
    "vanished",
    "removed",
    "frozen",
    "gap",
    "exported_pod",
    "missing_namespace",
    "no_pod_mapping",
    "no_group",
)
GPU_KINDS = (
    ("busy", 55),
    ("idle", 10),
    ("idle_no_prof", 3),
    ("busy_sample", 2),
    ("went_idle", 2),
    ("new_holder", 2),
    ("mem_low", 8),
    ("mem_peak", 2),
    ("mem_new_holder", 1),
    ("idle_mem_low", 3),
    ("no_reserved", 3),
    ("no_process", 2),
    ("vgpu_shared", 2),
    ("mig", 4),
    ("mig_no_prof", 2),
)
# Families every GPU (or MIG instance) has, besides utilization and memory.
_STATIC = (
    ("DCGM_FI_DEV_SM_CLOCK", ("1980", "1755")),
    ("DCGM_FI_DEV_MEM_CLOCK", ("2619",)),
    ("DCGM_FI_DEV_MEMORY_TEMP", ("45", "46")),
    ("DCGM_FI_DEV_GPU_TEMP", ("41", "42")),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", ("0",)),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", ("12", "14")),
    ("DCGM_FI_DEV_ENC_UTIL", ("0",)),
    ("DCGM_FI_DEV_DEC_UTIL", ("0",)),
    ("DCGM_FI_DEV_XID_ERRORS", ("0",)),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", ("0.31", "0.28")),
    ("DCGM_FI_PROF_DRAM_ACTIVE", ("0.22", "0.25")),
)
EXPORTER_POD = {
    "pod": "nvidia-dcgm-exporter-abcde",
    "namespace": "gpu-operator",
    "container": "nvidia-dcgm-exporter",
}


@dataclass
class Node:
    index: int
    name: str
    cluster: str
    instance: str
    clock: int
    fault: str = ""

    @property
    def target(self) -> dict[str, str]:
        labels = {"cluster": self.cluster, "job": JOB, "instance": self.instance, "node": self.name}
        if self.fault == "exported_pod":
            labels |= EXPORTER_POD
        return labels

    @property
    def host_label(self) -> str:
        return "Hostname" if self.index % 2 else "hostname"


class DcgmFleet:
    def __init__(self, gpus: int, timeline: Timeline, seed: int = 21) -> None:
        self.t = timeline
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
        return Node(
            i, f"gpu-node-{i:05d}", "gpu-east" if i % 2 == 0 else "gpu-west", ip, self.t.clock_of(i)
        )

    def build(self) -> Fleet:
        for node in self.nodes:
            self.node_series = []
            self._build_node(node)
            self._apply_fault(node)
        fleet_platform.add_platform(self.fleet, self.t)
        return self.fleet

    def _add(
        self, name: str, labels: dict[str, str], node: Node, segments: list[Segment]
    ) -> Series:
        series = Series(name, label_text(labels), node.clock, segments)
        self.fleet.add(series)
        self.node_series.append(series)
        return series

    def _ksm(self, name: str, node: Node, labels: dict[str, str], segments: list[Segment]) -> None:
        ksm = {"cluster": node.cluster, "job": "kube-state-metrics", "instance": "10.96.0.20:8080"}
        self.fleet.add(Series(name, label_text(ksm | labels), node.clock, segments))

    def _build_node(self, node: Node) -> None:
        lo, hi = 0, self.t.steps
        self._add("up", node.target, node, const("1", lo, hi))
        info = {
            "node": node.name,
            "kubelet_version": "v1.30.2",
            "container_runtime_version": "containerd://1.7.18",
        }
        self._ksm(
            "kube_node_info",
            node,
            info,
            const("1", lo, hi if node.fault != "removed" else self.t.at(-20)),
        )
        for g in range(8):
            uuid = "GPU-" + gpu_uuid(f"{node.name}/{g}")
            kind = (
                self.rng.choices(self.kinds, self.weights)[0] if self.rng.random() < 0.8 else "free"
            )
            self._gpu(node, g, uuid, kind)

    def _device(self, node: Node, g: int, uuid: str) -> dict[str, str]:
        return node.target | {
            "gpu": str(g),
            "UUID": uuid,
            "device": f"nvidia{g}",
            "modelName": MODEL,
            "pci_bus_id": f"00000000:{0x18 + g * 0x10:02X}:00.0",
            node.host_label: node.name,
            "DCGM_FI_DRIVER_VERSION": "550.54.15",
        }

    def _pod(self, node: Node, suffix: str) -> dict[str, str]:
        team = f"team-{self.rng.randrange(12):02d}"
        pod = {
            "namespace": team,
            "pod": f"job-{node.index}-{suffix}-{hex_id(node.name + suffix, 5)}",
            "container": "main",
        }
        self._ksm_pod(node, pod)
        if node.fault == "no_pod_mapping":
            return {}
        labels = pod | {"team": team, "gpu_group": team}
        if node.fault == "no_group":
            del labels["gpu_group"]
        if node.fault == "missing_namespace":
            del labels["namespace"]
        if node.fault == "exported_pod":
            labels = {f"exported_{k}" if k in EXPORTER_POD else k: v for k, v in labels.items()}
        return labels

    def _ksm_pod(self, node: Node, pod: dict[str, str]) -> None:
        lo, hi = 0, self.t.steps
        request = pod | {"node": node.name, "resource": "nvidia_com_gpu", "unit": "integer"}
        self._ksm("kube_pod_container_resource_requests", node, request, const("1", lo, hi))
        for phase, value in (("Running", "1"), ("Pending", "0")):
            labels = {"namespace": pod["namespace"], "pod": pod["pod"], "phase": phase}
            self._ksm("kube_pod_status_phase", node, labels, const(value, lo, hi))

    def _gpu(self, node: Node, g: int, uuid: str, kind: str) -> None:
        t = self.t
        lo, hi = 0, t.steps
        device = self._device(node, g, uuid)
        if kind in ("mig", "mig_no_prof"):
            for k, (share, busy) in enumerate(((65, True), (1, False)), start=1):
                mig = device | {"GPU_I_ID": str(k), "GPU_I_PROFILE": "3g.40gb"}
                pod = self._pod(node, f"{g}m{k}")
                labels = mig | pod
                if kind == "mig":  # without DCP's fields a MIG instance has no activity
                    self._add(
                        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                        labels,
                        node,
                        pattern(BUSY if busy else IDLE, lo, hi),
                    )
                self._memory(node, labels, share, TOTAL_MIB // 2, lo, hi, reserved=True)
                self._static(node, labels)
            return
        if kind == "vgpu_shared":  # --kubernetes-virtual-gpus: the GPU's values per pod
            for k in range(2):
                pod = self._pod(node, f"{g}v{k}")
                self._gpu_series(node, device | pod | {"vgpu": str(k)}, kind, True, lo, hi)
            return
        busy = kind in {"busy", "mem_low", "mem_peak", "mem_new_holder", "no_reserved", "free"}
        start = {"new_holder": t.at(-20), "mem_new_holder": t.at(-40)}.get(kind, lo)
        labels = device
        if kind != "free":
            pod = self._pod(node, str(g))
            # Before the pod got it (new holders), the GPU's series had no pod labels.
            if start > lo:
                self._gpu_series(node, device, kind, busy, lo, start)
            labels = device | pod
        self._gpu_series(node, labels, kind, busy, start, hi)

    def _gpu_series(
        self, node: Node, labels: dict[str, str], kind: str, busy: bool, lo: int, hi: int
    ) -> None:
        t = self.t
        util = pattern(BUSY_PCT if busy else IDLE_PCT, lo, hi)
        prof = pattern(BUSY if busy else IDLE, lo, hi)
        if kind == "busy_sample":
            s = max(lo, t.at(-15))
            util = pattern(IDLE_PCT, lo, s) + const("85", s, s + 1) + pattern(IDLE_PCT, s + 1, hi)
        elif kind == "went_idle":
            s = t.at(-20)
            util = pattern(BUSY_PCT, lo, s) + pattern(IDLE_PCT, s, hi)
            prof = pattern(BUSY, lo, s) + pattern(IDLE, s, hi)
        self._add("DCGM_FI_DEV_GPU_UTIL", labels, node, util)
        if kind != "idle_no_prof":
            self._add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, node, prof)
        low = kind in {"mem_low", "mem_peak", "mem_new_holder", "idle_mem_low"}
        pct = 0 if kind == "no_process" else 8 if low else 60
        self._memory(node, labels, pct, TOTAL_MIB, lo, hi, reserved=kind != "no_reserved")
        if kind == "mem_peak":
            (used,) = [s for s in self.node_series[-3:] if s.name == "DCGM_FI_DEV_FB_USED"]
            s = t.at(-40)
            used.segments = const(str(TOTAL_MIB * 8 // 100), lo, s) + const(
                str(TOTAL_MIB // 2), s, s + 10
            )
            used.segments += const(str(TOTAL_MIB * 8 // 100), s + 10, hi)
        self._static(node, labels, lo, hi)

    def _memory(
        self,
        node: Node,
        labels: dict[str, str],
        pct: int,
        total: int,
        lo: int,
        hi: int,
        *,
        reserved: bool,
    ) -> None:
        used = total * pct // 100
        reserved_mib = 512 if reserved else 0
        self._add("DCGM_FI_DEV_FB_USED", labels, node, const(str(used), lo, hi))
        self._add(
            "DCGM_FI_DEV_FB_FREE", labels, node, const(str(total - used - reserved_mib), lo, hi)
        )
        if reserved:
            self._add("DCGM_FI_DEV_FB_RESERVED", labels, node, const(str(reserved_mib), lo, hi))

    def _static(
        self, node: Node, labels: dict[str, str], lo: int = 0, hi: int | None = None
    ) -> None:
        hi = self.t.steps if hi is None else hi
        for name, values in _STATIC:
            self._add(name, labels, node, pattern(values, lo, hi))
        self._add(
            "DCGM_FI_DEV_POWER_USAGE", labels, node, pattern(("212.53", "230.12", "198.47"), lo, hi)
        )
        self._add(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            labels,
            node,
            counter([(lo, hi, 6400000.0)], 1.2e10 + lo * 6400000.0),
        )

    def _apply_fault(self, node: Node) -> None:
        fault, t = node.fault, self.t
        if fault == "scrape_failing":
            f = t.at(-20)
            for s in self.node_series:
                clip(s, f)
            (up,) = [s for s in self.node_series if s.name == "up"]
            up.segments += const("0", f, t.steps)
        elif fault == "no_gpu_metrics":
            for s in self.node_series:
                if s.name != "up":
                    clip(s, t.at(-20))
        elif fault in ("vanished", "removed"):
            for s in self.node_series:
                clip(s, t.at(-20))
        elif fault == "frozen":
            f = t.at(-10)
            for s in self.node_series:
                if s.name in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
                    last = s.segments[-1]
                    frozen = (
                        last.base + last.per_step * (f - last.start) if last.per_step else 212.53
                    )
                    clip(s, f)
                    s.segments += const(repr(round(frozen, 3)), f, t.steps)
        elif fault == "gap":
            for s in self.node_series:
                punch(s, t.at(-8), t.at(-5))
