"""Which pod container holds which GPU, as the kubelet (or, failing that, the API) reports it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class DeviceIdKind(StrEnum):
    GPU = "gpu"  # GPU-<uuid>
    MIG = "mig"  # MIG-<uuid>, or the pre-R470 MIG-GPU-<uuid>/<gi>/<ci>
    OTHER = "other"  # a form we do not resolve, e.g. GKE's nvidia0


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """A device ID from the kubelet, split into the NVML UUID and the sharing replica."""

    raw: str
    uuid: str  # the UUID NVML reports, without any ::replica suffix
    kind: DeviceIdKind
    replica: int | None = None  # set for time-sliced/MPS replicas, "<uuid>::<n>"


@dataclass(frozen=True, slots=True)
class ContainerDevices:
    """One container's devices of one resource, as the kubelet's List call returns them."""

    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Allocation:
    """One pod container holding one GPU (or, without device identity, ``count`` GPUs)."""

    namespace: str
    pod: str
    container: str
    resource: str
    device: DeviceRef | None  # None: only the count is known (API-limits fallback)
    count: int = 1
