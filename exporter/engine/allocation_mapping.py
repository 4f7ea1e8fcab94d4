"""Turn kubelet pod-resources answers (or pod limits) into GPU allocations. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from exporter.model.allocation import Allocation, ContainerDevices, DeviceIdKind, DeviceRef

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_REPLICA = re.compile(r"^(?P<id>.+)::(?P<replica>\d+)$")


def is_gpu_resource(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """``nvidia.com/gpu``, any ``nvidia.com/mig-*`` profile, and configured extra names."""
    return name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX) or name in extra


def parse_device_id(raw: str) -> DeviceRef:
    """Split ``GPU-<uuid>``, ``MIG-<uuid>`` or ``<either>::<replica>`` into its parts."""
    replica: int | None = None
    device = raw
    match = _REPLICA.match(raw)
    if match:
        device, replica = match["id"], int(match["replica"])
    if "::" in device:
        kind = DeviceIdKind.OTHER  # a replica suffix that is not a number
    elif device.startswith("MIG-"):
        kind = DeviceIdKind.MIG
    elif device.startswith("GPU-"):
        kind = DeviceIdKind.GPU
    else:
        kind = DeviceIdKind.OTHER
    return DeviceRef(raw=raw, uuid=device, kind=kind, replica=replica)


def allocations_from_devices(
    containers: Iterable[ContainerDevices], extra_resources: frozenset[str] = frozenset()
) -> list[Allocation]:
    """One allocation per container x GPU device; non-GPU resources are ignored.

    A replica ID (``<uuid>::3``) and the plain UUID name the same physical GPU,
    so one container listed with several replicas of one GPU holds it once.
    """
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Allocation] = []
    for entry in containers:
        if not is_gpu_resource(entry.resource, extra_resources):
            continue
        for raw in entry.device_ids:
            ref = parse_device_id(raw)
            key = (entry.namespace, entry.pod, entry.container, ref.uuid)
            if key in seen:
                continue
            seen.add(key)
            out.append(Allocation(entry.namespace, entry.pod, entry.container, entry.resource, ref))
    return out


def allocations_from_limits(
    namespace: str,
    pod: str,
    container_limits: Mapping[str, Mapping[str, str]],
    extra_resources: frozenset[str] = frozenset(),
) -> list[Allocation]:
    """The fallback without the kubelet socket: GPU counts from the pod's container limits.

    There is no device identity here, so each allocation carries ``device=None``
    and the count; the exporter exports it with ``uuid=""``.
    """
    out: list[Allocation] = []
    for container, limits in sorted(container_limits.items()):
        for resource, quantity in sorted(limits.items()):
            if not is_gpu_resource(resource, extra_resources):
                continue
            count = _whole_quantity(quantity)
            if count > 0:
                out.append(Allocation(namespace, pod, container, resource, None, count))
    return out


def _whole_quantity(quantity: str) -> int:
    # Extended resources are whole numbers; anything else is not a GPU count.
    try:
        return int(quantity)
    except ValueError:
        return 0
