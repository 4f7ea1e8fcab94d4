"""PromQL for GPU allocation and use, for our exporter's metrics and for dcgm-exporter's.

Both give the same three views, aggregated by any labels:

- **allocated**: GPUs held by pods (1 per GPU);
- **used**: allocated GPUs weighted by their utilization (0-1);
- **idle**: allocated GPUs whose utilization is under the noise floor.

Our exporter: ``guardian_pod_gpu_allocated`` joined on ``(cluster, node, uuid)`` with
``guardian_gpu_info`` (the model) and ``guardian_gpu_utilization_ratio``. dcgm-exporter:
a GPU's series carry ``namespace``/``pod`` while a pod holds it, and ``gpu_group``
through the relabelling ``guardian dcgm-config`` generates; utilization is
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (MIG-aware) or ``DCGM_FI_DEV_GPU_UTIL / 100``; series
whose ``pod`` is the exporter's own (no ``honor_labels``) are not allocations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GROUP = "gpu_group"
MODEL = "model"  # the label every view carries the GPU model under


def matchers(labels: Mapping[str, str], regex: Mapping[str, str] | None = None) -> str:
    """``, a="x", b=~"y"`` for inside an existing selector."""
    parts = [f'{k}="{_quote(v)}"' for k, v in sorted(labels.items())]
    parts += [f'{k}=~"{_quote(v)}"' for k, v in sorted((regex or {}).items())]
    return "".join(f", {p}" for p in parts)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class MetricProfile:
    name: str
    detect: str  # a metric only this exporter serves
    gpu_key: tuple[str, ...]  # labels that identify one GPU (or MIG instance)
    allocation: str  # per GPU and pod, value 1; ``{sel}`` takes extra matchers
    utilization: str  # per GPU, 0-1

    def allocated(self, by: Sequence[str], sel: str = "") -> str:
        return f"sum by ({', '.join(by)}) ({self.allocation.format(sel=sel)})"

    def _weighted(self, weight: str, by: Sequence[str], sel: str, agg: str = "sum") -> str:
        key = ", ".join(self.gpu_key)
        return (
            f"{agg} by ({', '.join(by)}) ({self.allocation.format(sel=sel)}"
            f" * on ({key}) group_left () ({weight}))"
        )

    def used(self, by: Sequence[str], sel: str = "") -> str:
        return self._weighted(self.utilization, by, sel)

    def idle(self, by: Sequence[str], floor: float, sel: str = "") -> str:
        return self._weighted(f"{self.utilization} < bool {floor!r}", by, sel)

    def peak(self, by: Sequence[str], sel: str = "") -> str:
        """The highest utilization of the GPUs each group holds."""
        return self._weighted(self.utilization, by, sel, agg="max")


GUARDIAN = MetricProfile(
    name="guardian",
    detect="guardian_pod_gpu_allocated",
    gpu_key=("cluster", "node", "uuid"),
    allocation=(
        "(max by (cluster, node, uuid, gpu_group, namespace, pod, model) ("
        'guardian_pod_gpu_allocated{{uuid!=""{sel}}}'
        " * on (cluster, node, uuid) group_left (model)"
        " max by (cluster, node, uuid, model) (guardian_gpu_info))"
        " or on (cluster, node, uuid, namespace, pod)"
        " max by (cluster, node, uuid, gpu_group, namespace, pod) ("
        'guardian_pod_gpu_allocated{{pod!=""{sel}}}))'
    ),
    utilization="max by (cluster, node, uuid) (guardian_gpu_utilization_ratio)",
)

_DCGM_KEY = "cluster, Hostname, UUID, GPU_I_ID"
DCGM = MetricProfile(
    name="dcgm",
    detect="DCGM_FI_DEV_FB_USED",
    gpu_key=("cluster", "Hostname", "UUID", "GPU_I_ID"),
    allocation=(
        "label_replace(group by (cluster, instance, Hostname, UUID, GPU_I_ID, gpu_group,"
        " namespace, pod, modelName) ("
        'DCGM_FI_DEV_FB_USED{{namespace!="", pod!="", exported_pod=""{sel}}}'
        ' unless on (cluster, instance, pod) up), "model", "$1", "modelName", "(.*)")'
    ),
    utilization=(
        f"(max by ({_DCGM_KEY}) (DCGM_FI_PROF_GR_ENGINE_ACTIVE)"
        f" or max by ({_DCGM_KEY}) (DCGM_FI_DEV_GPU_UTIL) / 100)"
    ),
)

PROFILES = {p.name: p for p in (GUARDIAN, DCGM)}
