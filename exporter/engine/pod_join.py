"""Join the NVML snapshot with pods and allocations. Pure: directory and allocations come in.

- Pod series get ``namespace``, ``pod``, ``gpu_group`` and the allowlisted pod labels, and
  their container's name from the pod's status. A pod the API does not know keeps only its
  ``pod_uid`` series. (``node`` and ``cluster`` are added to every series when rendering.)
- Every pod x GPU allocation becomes a series, also for pods that run no GPU process.
- A pod process on a GPU that is not allocated to that pod is flagged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from exporter.model.allocation import Allocation
from exporter.model.enrichment import (
    IDENTITY_LABELS,
    AllocationSeries,
    Enrichment,
    UnallocatedUse,
)
from exporter.model.pods import PodDirectory, PodInfo
from exporter.model.snapshot import PodGpuSeries
from guardian_common.grouping import GroupingOptions, plan_label_keys


@dataclass(frozen=True)
class EnrichmentInput:
    pods: PodDirectory
    allocations: Sequence[Allocation]
    # True when allocations carry device identity (pod-resources), False for the limits fallback.
    identified: bool
    gpu_index: Mapping[str, str]  # uuid (GPU or MIG) -> NVML index label
    pod_series: Sequence[PodGpuSeries]


def _row(
    namespace: str, name: str, group: str, labels: Mapping[str, str], keys: Mapping[str, str]
) -> tuple[str, ...]:
    return (namespace, name, group, *(labels.get(raw, "") for raw in keys))


def _values(pod: PodInfo, grouping: GroupingOptions, keys: Mapping[str, str]) -> tuple[str, ...]:
    return _row(pod.namespace, pod.name, grouping.group_of(pod.labels), pod.labels, keys)


def enrich(data: EnrichmentInput, grouping: GroupingOptions, kube_up: bool) -> Enrichment:
    pods = list(data.pods.by_uid.values())
    plan = plan_label_keys((key for pod in pods for key in pod.labels), grouping)
    # Raw key -> Prometheus name, ordered by name so the schema is stable across scrapes.
    keys = dict(sorted(plan.names.items(), key=lambda item: item[1]))
    pod_labels = {pod.uid: _values(pod, grouping, keys) for pod in pods}
    by_name = {(pod.namespace, pod.name): pod for pod in pods}
    names = container_names(data.pods, data.pod_series)

    allocations = tuple(_allocation_series(data, by_name, grouping, keys))
    return Enrichment(
        label_names=(*IDENTITY_LABELS, *keys.values()),
        pod_labels=pod_labels,
        unknown_pod=_row("", "", "", {}, keys),
        container_names=names,
        allocations=allocations,
        unallocated_use=(
            tuple(_unallocated(data, pod_labels, by_name, names)) if data.identified else ()
        ),
        kube_up=kube_up,
        collisions=plan.collisions,
        reserved=plan.reserved,
    )


def container_names(
    pods: PodDirectory, series: Iterable[PodGpuSeries]
) -> dict[tuple[str, str], str]:
    """(pod_uid, container ID) -> name, where the pod's status lists that container ID."""
    out: dict[tuple[str, str], str] = {}
    for s in series:
        pod = pods.by_uid.get(s.pod_uid)
        name = pod.container_names.get(s.container_id) if pod is not None else None
        if name:
            out[(s.pod_uid, s.container_id)] = name
    return out


def _allocation_series(
    data: EnrichmentInput,
    by_name: Mapping[tuple[str, str], PodInfo],
    grouping: GroupingOptions,
    keys: Mapping[str, str],
) -> Iterable[AllocationSeries]:
    for alloc in data.allocations:
        if (alloc.namespace, alloc.pod) in data.pods.finished:
            continue
        pod = by_name.get((alloc.namespace, alloc.pod))
        if pod is None:
            # The kubelet still lists a pod the API no longer has (or has not sent yet):
            # its group is unknown, so it is left empty for GpuMissingGroupLabel to catch.
            labels = _row(alloc.namespace, alloc.pod, "", {}, keys)
        else:
            labels = _values(pod, grouping, keys)
        uuid = alloc.device.uuid if alloc.device is not None else ""
        yield AllocationSeries(
            gpu=data.gpu_index.get(uuid, "") if uuid else "",
            uuid=uuid,
            namespace=alloc.namespace,
            pod=alloc.pod,
            container=alloc.container,
            resource=alloc.resource,
            labels=labels,
            value=float(alloc.count),
        )


def _unallocated(
    data: EnrichmentInput,
    pod_labels: Mapping[str, tuple[str, ...]],
    by_name: Mapping[tuple[str, str], PodInfo],
    names: Mapping[tuple[str, str], str],
) -> Iterable[UnallocatedUse]:
    held = {
        (alloc.namespace, alloc.pod, alloc.device.uuid)
        for alloc in data.allocations
        if alloc.device is not None
    }
    for series in data.pod_series:
        pod = data.pods.by_uid.get(series.pod_uid)
        if pod is None or (pod.namespace, pod.name) not in by_name:
            continue  # without the pod's name we cannot look up what it holds
        if (pod.namespace, pod.name, series.uuid) in held:
            continue
        yield UnallocatedUse(
            gpu=series.gpu,
            uuid=series.uuid,
            pod_uid=series.pod_uid,
            container=names.get((series.pod_uid, series.container_id), ""),
            container_id=series.container_id,
            labels=pod_labels[series.pod_uid],
        )
