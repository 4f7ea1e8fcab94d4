"""Kubernetes identity added to the exporter's pod series: names, gpu_group, allowlisted labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Label names every enriched pod series carries, after its own labels (metrics.POD_LABELS).
IDENTITY_LABELS = ("namespace", "pod", "gpu_group")


@dataclass(frozen=True, slots=True)
class AllocationSeries:
    """``guardian_pod_gpu_allocated``: one pod container holding one GPU (or ``value`` GPUs)."""

    gpu: str  # NVML index, "" when the device is unknown on this node or not identified
    uuid: str  # "" in the API-limits fallback
    namespace: str
    pod: str
    container: str
    resource: str
    labels: tuple[str, ...]  # values for Enrichment.label_names, in order
    value: float = 1.0


@dataclass(frozen=True, slots=True)
class UnallocatedUse:
    """``guardian_pod_gpu_unallocated_use``: a pod's process runs on a GPU not allocated to it."""

    gpu: str
    uuid: str
    pod_uid: str
    container: str  # the name, "" when unknown
    container_id: str
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Enrichment:
    """Everything the Kubernetes side adds to one snapshot."""

    # The identity labels, then the sanitized allowlisted keys.
    label_names: tuple[str, ...] = IDENTITY_LABELS
    # pod_uid -> values for label_names; pods the API does not know are absent.
    pod_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Values for a pod the API does not know: all empty.
    unknown_pod: tuple[str, ...] = ("", "", "")
    # (pod_uid, container ID) -> container name, for the snapshot's pod series that have one.
    container_names: Mapping[tuple[str, str], str] = field(default_factory=dict)
    allocations: tuple[AllocationSeries, ...] = ()
    unallocated_use: tuple[UnallocatedUse, ...] = ()
    kube_up: bool | None = None  # None: Kubernetes enrichment is off
    cluster_uid: str = ""  # the kube-system Namespace's UID; "": not read (yet)
    # Prometheus label name -> raw keys withheld because they collide after sanitizing.
    collisions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reserved: tuple[str, ...] = ()  # raw keys refused because they map onto our own labels
