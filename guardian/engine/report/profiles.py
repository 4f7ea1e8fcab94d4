"""PromQL for GPU allocation and use, for our exporter's metrics and for dcgm-exporter's.

Both give the same three views, aggregated by any labels:

- **allocated**: GPUs held by pods (1 per GPU);
- **used**: allocated GPUs weighted by their utilization (0-1);
- **idle**: allocated GPUs whose utilization is under the noise floor.

and, splitting the idle view, **idle in partly idle workloads**: the idle GPUs of a
workload that at the same instant holds a GPU that is not idle (busy, or without
utilization), the workload told by its pod's name as everywhere in the report. A right-size
would free those, not a reclaim; the rest of the idle GPUs are in wholly idle workloads.

Our exporter: ``guardian_pod_gpu_allocated`` joined on ``(cluster, node, uuid)`` with
``guardian_gpu_info`` (the model) and ``guardian_gpu_utilization_ratio``. dcgm-exporter:
a GPU's series carry ``namespace``/``pod`` while a pod holds it, and ``gpu_group``
through the relabelling ``guardian dcgm-config`` generates; utilization is
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (MIG-aware) or ``DCGM_FI_DEV_GPU_UTIL / 100``; series
whose ``pod`` is the exporter's own (no ``honor_labels``) are not allocations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from guardian.engine.simulate.identity import with_root_label

GROUP = "gpu_group"
MODEL = "model"  # the label every view carries the GPU model under
ROOT = "guardian_root"  # the label the partly idle view puts a pod's workload under


def matchers(labels: Mapping[str, str], regex: Mapping[str, str] | None = None) -> str:
    """``, a="x", b=~"y"`` for inside an existing selector."""
    parts = [f'{k}="{_quote(v)}"' for k, v in sorted(labels.items())]
    parts += [f'{k}=~"{_quote(v)}"' for k, v in sorted((regex or {}).items())]
    return "".join(f", {p}" for p in parts)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class MetricProfile:
    """``{sel}`` takes extra matchers (with a leading comma) on the pod's series; ``{gsel}``
    matchers (without) on the per-GPU series joined in, so a query about a few pods does
    not read every GPU of the fleet (``device_matchers``)."""

    name: str
    detect: str  # a metric only this exporter serves, with namespace and pod labels
    gpu_key: tuple[str, ...]  # labels that identify one GPU (or MIG instance)
    allocation: str  # per GPU and pod, value 1, with the model
    pod_allocation: str  # the same without the model: no join, cheap over long ranges
    model_lookup: str  # per GPU and pod over the last ``{w}``, with the model
    utilization: str  # per GPU, 0-1
    device_label: str  # the GPU's identity among gpu_key, for device_matchers
    pod_labels_on_devices: bool  # dcgm: every GPU series carries its pod

    def allocated(self, by: Sequence[str], sel: str = "", gsel: str = "") -> str:
        return f"sum by ({', '.join(by)}) ({self.allocation.format(sel=sel, gsel=gsel)})"

    def _weighted(
        self, weight: str, by: Sequence[str], sel: str, gsel: str, agg: str = "sum"
    ) -> str:
        key = ", ".join(self.gpu_key)
        return (
            f"{agg} by ({', '.join(by)}) ({self.allocation.format(sel=sel, gsel=gsel)}"
            f" * on ({key}) group_left () ({weight.format(gsel=gsel)}))"
        )

    def used(self, by: Sequence[str], sel: str = "", gsel: str = "") -> str:
        return self._weighted(self.utilization, by, sel, gsel)

    def idle(self, by: Sequence[str], floor: float, sel: str = "", gsel: str = "") -> str:
        return self._weighted(f"{self.utilization} < bool {floor!r}", by, sel, gsel)

    def idle_partly(self, by: Sequence[str], floor: float, sel: str = "", gsel: str = "") -> str:
        """The idle GPUs (as :meth:`idle` counts them) of the workloads that hold, at the
        same instant, an allocated GPU that is not idle."""
        key = ", ".join(self.gpu_key)
        alloc = with_root_label(self.allocation.format(sel=sel, gsel=gsel), ROOT)
        util = self.utilization.format(gsel=gsel)
        idle = f"{alloc} * on ({key}) group_left () ({util} < bool {floor!r})"
        other = f"{alloc} unless on ({key}) ({util} < {floor!r})"
        return f"sum by ({', '.join(by)}) (({idle}) and on (cluster, namespace, {ROOT}) ({other}))"

    def models(self, sel: str, gsel: str, window_seconds: float) -> str:
        """Per pod, the model of the GPUs it held in the last window (one instant query)."""
        window = f"{int(window_seconds) + 1}s"
        inner = self.model_lookup.format(sel=sel, gsel=gsel, w=window)
        return f"group by (namespace, pod, {MODEL}) ({inner})"

    def devices(self, sel: str, window_seconds: float) -> str:
        """The GPUs the pods ``sel`` matches held at some point in the last window."""
        selector = f"{self.detect}{{{sel.removeprefix(', ')}}}"
        window = f"{int(window_seconds) + 1}s"
        return f"group by ({self.device_label}) (last_over_time({selector}[{window}]))"

    def device_matchers(self, sel: str, devices: Sequence[str]) -> str:
        """Matchers (no leading comma) for the per-GPU series of ``devices``."""
        if self.pod_labels_on_devices:
            return sel.removeprefix(", ")
        pattern = "|".join(re.escape(d) for d in sorted(devices))
        return matchers({}, {self.device_label: pattern}).removeprefix(", ")


GUARDIAN = MetricProfile(
    name="guardian",
    detect="guardian_pod_gpu_allocated",
    gpu_key=("cluster", "node", "uuid"),
    allocation=(
        "(max by (cluster, node, uuid, gpu_group, namespace, pod, model) ("
        'guardian_pod_gpu_allocated{{uuid!=""{sel}}}'
        " * on (cluster, node, uuid) group_left (model)"
        " max by (cluster, node, uuid, model) (guardian_gpu_info{{{gsel}}}))"
        " or on (cluster, node, uuid, namespace, pod)"
        " max by (cluster, node, uuid, gpu_group, namespace, pod) ("
        'guardian_pod_gpu_allocated{{pod!=""{sel}}}))'
    ),
    pod_allocation=(
        'max by (cluster, node, uuid, namespace, pod) (guardian_pod_gpu_allocated{{pod!=""{sel}}})'
    ),
    model_lookup=(
        "max by (cluster, node, uuid, namespace, pod) ("
        'last_over_time(guardian_pod_gpu_allocated{{uuid!=""{sel}}}[{w}]))'
        " * on (cluster, node, uuid) group_left (model)"
        " max by (cluster, node, uuid, model) (last_over_time(guardian_gpu_info{{{gsel}}}[{w}]))"
    ),
    utilization="max by (cluster, node, uuid) (guardian_gpu_utilization_ratio{{{gsel}}})",
    device_label="uuid",
    pod_labels_on_devices=False,
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
    pod_allocation=(
        "group by (cluster, Hostname, UUID, GPU_I_ID, namespace, pod) ("
        'DCGM_FI_DEV_FB_USED{{namespace!="", pod!="", exported_pod=""{sel}}})'
    ),
    model_lookup=(
        'label_replace(last_over_time(DCGM_FI_DEV_FB_USED{{pod!=""{sel}}}[{w}]),'
        ' "model", "$1", "modelName", "(.*)")'
    ),
    utilization=(
        f"(max by ({_DCGM_KEY}) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{{{{gsel}}}}}})"
        f" or max by ({_DCGM_KEY}) (DCGM_FI_DEV_GPU_UTIL{{{{{{gsel}}}}}}) / 100)"
    ),
    device_label="UUID",
    pod_labels_on_devices=True,
)

PROFILES = {p.name: p for p in (GUARDIAN, DCGM)}
