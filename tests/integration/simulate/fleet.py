"""A small GPU fleet's history, as our exporter would have written it, for backfilling.

Every series is one sample a minute (or ``step``) from ``T0``; a workload is a pod
holding one GPU over some minutes with a utilization per minute. Gaps leave a node's
every series out, as a dead exporter does. Each holder runs a process on its GPU, and the
exporter's idle facts (observed since the node's first reading, or since its gap) come with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from guardian.adapters.openmetrics import Sample
from testbed.feeds import with_idle_facts

T0 = 1_700_006_400.0  # 2023-11-15T00:00:00Z: days in the report start at T0
CLUSTER = "c1"
MODELS = {"A100": "NVIDIA A100-SXM4-80GB", "H100": "NVIDIA H100 80GB HBM3"}


@dataclass(frozen=True)
class Gpu:
    node: str
    index: int
    model: str

    @property
    def uuid(self) -> str:
        return f"GPU-{self.node}-{self.index}"


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    gpu: Gpu
    group: str
    start: int  # minutes from T0
    end: int  # exclusive
    utilization: Callable[[int], float]  # minute -> 0-1


@dataclass
class Fleet:
    minutes: int
    step: int = 1  # minutes between samples
    gpus: list[Gpu] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    gaps: dict[str, Sequence[tuple[int, int]]] = field(default_factory=dict)  # node -> spans

    def _up(self, node: str, minute: int) -> bool:
        return not any(a <= minute < b for a, b in self.gaps.get(node, ()))

    def samples(self) -> list[Sample]:
        out: list[Sample] = []
        nodes = sorted({g.node for g in self.gpus})
        for minute in range(0, self.minutes, self.step):
            ts = T0 + minute * 60
            for node in nodes:
                if not self._up(node, minute):
                    continue
                base = {"cluster": CLUSTER, "node": node}
                out.append(Sample("guardian_exporter_nvml_up", base, ts, 1.0))
                out.append(Sample("guardian_exporter_last_success_timestamp_seconds", base, ts, ts))
            for gpu in self.gpus:
                if not self._up(gpu.node, minute):
                    continue
                labels = {
                    "cluster": CLUSTER,
                    "node": gpu.node,
                    "gpu": str(gpu.index),
                    "uuid": gpu.uuid,
                }
                info = {
                    **labels,
                    "model": MODELS[gpu.model],
                    "driver_version": "550",
                    "mig": "disabled",
                }
                out.append(Sample("guardian_gpu_info", info, ts, 1.0))
                holder = next(
                    (p for p in self.pods if p.gpu == gpu and p.start <= minute < p.end), None
                )
                util = holder.utilization(minute) if holder else 0.0
                out.append(Sample("guardian_gpu_utilization_ratio", labels, ts, util))
                if holder is not None:
                    alloc = {
                        **labels,
                        "container": "main",
                        "resource": "nvidia.com/gpu",
                        "namespace": holder.namespace,
                        "pod": holder.name,
                        "gpu_group": holder.group,
                    }
                    out.append(Sample("guardian_pod_gpu_allocated", alloc, ts, 1.0))
        return with_idle_facts(out)
