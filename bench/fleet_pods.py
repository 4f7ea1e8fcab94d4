"""The pods of the guardian fleet (fleet_guardian.py): their identity and labels (with
the pipeline faults that rename or empty them), allocations, per-pod series and the
exporter's pod-per-device facts."""

from __future__ import annotations

import random
from typing import Any

from fleet_core import Segment, Series, Timeline, gpu_uuid, hex_id
from fleet_facts import FactWriter
from fleet_shapes import BUSY, const, pattern, timestamps

JOB = "gpu-guardian-exporter"
TOTAL = 85899345920  # 80 GiB
MIG_TOTAL = 42949672960  # 40 GiB
Node = Any


class PodSeries:
    """Mixed into GuardianFleet: needs its ``t``, ``rng``, ``facts`` and ``_add``."""

    t: Timeline
    rng: random.Random
    facts: FactWriter

    def _add(
        self, name: str, labels: dict[str, str], node: Node, segments: list[Segment]
    ) -> Series:
        raise NotImplementedError

    def _pod_identity(self, node: Node, suffix: str) -> dict[str, str]:
        team = f"team-{self.rng.randrange(12):02d}"
        seed = f"{node.name}/{suffix}"
        return {
            "namespace": team,
            "pod": f"job-{node.index}-{suffix}-{hex_id(seed, 5)}",
            "gpu_group": team,
            "team": team,
            "container": "main",
            "pod_uid": gpu_uuid(seed + "/uid"),
            "container_id": hex_id(seed + "/ctr", 64),
        }

    def _pod_labels(
        self, node: Node, device: dict[str, str], pod: dict[str, str]
    ) -> dict[str, str]:
        labels = device | pod
        if node.fault == "missing_pod":
            labels |= {"namespace": "", "pod": "", "gpu_group": "", "team": ""}
        return self._renamed(node, labels)

    def _renamed(self, node: Node, labels: dict[str, str]) -> dict[str, str]:
        if node.fault == "no_group":
            labels["gpu_group"] = ""
        if node.fault == "exported_pod":
            for key in ("pod", "namespace", "container"):
                if key in labels:
                    labels[f"exported_{key}"] = labels[key]
            labels |= {
                "pod": "gpu-guardian-exporter-x7k2p",
                "namespace": "gpu-guardian",
                "container": "exporter",
            }
        return labels

    def _allocation(
        self, node: Node, device: dict[str, str], pod: dict[str, str], resource: str, start: int
    ) -> None:
        labels = device | {
            k: pod[k] for k in ("namespace", "pod", "gpu_group", "team", "container")
        }
        labels["resource"] = resource
        if node.fault == "missing_pod":
            labels |= {"gpu_group": "", "team": ""}
        if node.fault == "no_uuid":
            labels |= {"uuid": "", "gpu": ""}
        self._add(
            "guardian_pod_gpu_allocated",
            self._renamed(node, labels),
            node,
            const("1", start, self.t.steps),
        )

    def _pod_series(
        self,
        node: Node,
        device: dict[str, str],
        pod: dict[str, str],
        *,
        busy: bool,
        lo: int,
        hi: int,
        mig: bool = False,
    ) -> None:
        labels = self._pod_labels(node, device, pod)
        total = MIG_TOTAL if mig else TOTAL
        self._add(
            "guardian_pod_gpu_memory_used_bytes", labels, node, const(str(total // 2), lo, hi)
        )
        self._add("guardian_pod_gpu_processes", labels, node, const("1", lo, hi))
        self._add(
            "guardian_pod_vgpu_memory_allocated_bytes", labels, node, const(str(total), lo, hi)
        )
        if mig:
            return
        # An idle pod's processes show no SM use at all (NVML's whole percent: 0), so the
        # exporter's idle_since (SM use > 0) and the window pack's floor (< 0.05) agree.
        sm = pattern(BUSY, lo, hi) if busy else const("0", lo, hi)
        self._add("guardian_pod_gpu_sm_utilization_ratio", labels, node, sm)
        if busy:
            self._add(
                "guardian_pod_gpu_last_active_timestamp_seconds",
                labels,
                node,
                timestamps(self.t, node.clock, lo, hi, lag=1.0),
            )

    def _pod_facts(
        self,
        node: Node,
        device: dict[str, str],
        pod: dict[str, str],
        running: tuple[int, int],
        *,
        busy: bool,
        mig: bool = False,
    ) -> None:
        """The pod-per-device facts: no container or container_id label."""
        bare = {k: v for k, v in pod.items() if k not in ("container", "container_id")}
        labels = self._pod_labels(node, device, bare)
        sm = None if mig else ([running] if busy else [])
        self.facts.pod(node, labels, running, sm)
