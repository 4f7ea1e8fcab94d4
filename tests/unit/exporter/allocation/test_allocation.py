from __future__ import annotations

import pytest

from exporter.engine.allocation_mapping import (
    allocations_from_devices,
    allocations_from_limits,
    is_gpu_resource,
    parse_device_id,
)
from exporter.model.allocation import Allocation, ContainerDevices, DeviceIdKind, DeviceRef

UUID = "GPU-1b2c3d4e-0000-1111-2222-333344445555"
MIG = "MIG-9f8e7d6c-0000-1111-2222-333344445555"


@pytest.mark.parametrize(
    ("raw", "uuid", "kind", "replica"),
    [
        (UUID, UUID, DeviceIdKind.GPU, None),
        (MIG, MIG, DeviceIdKind.MIG, None),
        (f"{UUID}::3", UUID, DeviceIdKind.GPU, 3),
        (f"{MIG}::0", MIG, DeviceIdKind.MIG, 0),
        ("MIG-GPU-1b2c/1/0", "MIG-GPU-1b2c/1/0", DeviceIdKind.MIG, None),
        ("nvidia0", "nvidia0", DeviceIdKind.OTHER, None),
        (f"{UUID}::x", f"{UUID}::x", DeviceIdKind.OTHER, None),
    ],
)
def test_device_id_forms(raw: str, uuid: str, kind: DeviceIdKind, replica: int | None) -> None:
    assert parse_device_id(raw) == DeviceRef(raw=raw, uuid=uuid, kind=kind, replica=replica)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("nvidia.com/gpu.shared", False),
        ("cpu", False),
        ("nvidia.com/gpux", False),
    ],
)
def test_gpu_resource_names(name: str, expected: bool) -> None:
    assert is_gpu_resource(name) is expected


def test_extra_resource_names_count_as_gpus() -> None:
    assert is_gpu_resource("nvidia.com/gpu.shared", frozenset({"nvidia.com/gpu.shared"}))


def test_allocations_per_container_and_gpu_with_replicas_merged() -> None:
    containers = [
        ContainerDevices("ml", "train-0", "main", "nvidia.com/gpu", (UUID,)),
        ContainerDevices("ml", "train-0", "main", "cpu", ("0", "1")),
        ContainerDevices(
            "ml", "share-0", "a", "nvidia.com/gpu.shared", (f"{UUID}::1", f"{UUID}::2")
        ),
        ContainerDevices("ml", "mig-0", "m", "nvidia.com/mig-1g.10gb", (MIG,)),
    ]

    allocations = allocations_from_devices(containers, frozenset({"nvidia.com/gpu.shared"}))

    assert [(a.pod, a.container, a.device.uuid if a.device else None) for a in allocations] == [
        ("train-0", "main", UUID),
        ("share-0", "a", UUID),
        ("mig-0", "m", MIG),
    ]
    assert allocations[1].device == DeviceRef(f"{UUID}::1", UUID, DeviceIdKind.GPU, 1)


def test_shared_resource_is_ignored_unless_configured() -> None:
    containers = [ContainerDevices("ml", "p", "c", "nvidia.com/gpu.shared", (f"{UUID}::1",))]
    assert allocations_from_devices(containers) == []


def test_limits_fallback_counts_gpus_without_identity() -> None:
    limits = {
        "main": {"nvidia.com/gpu": "2", "cpu": "4"},
        "sidecar": {"memory": "1Gi"},
        "mig": {"nvidia.com/mig-3g.40gb": "1"},
        "zero": {"nvidia.com/gpu": "0"},
    }

    assert allocations_from_limits("ml", "train-0", limits) == [
        Allocation("ml", "train-0", "main", "nvidia.com/gpu", None, 2),
        Allocation("ml", "train-0", "mig", "nvidia.com/mig-3g.40gb", None, 1),
    ]
