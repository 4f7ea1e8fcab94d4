from __future__ import annotations

from exporter.engine.pod_join import EnrichmentInput, enrich
from exporter.model.allocation import Allocation, DeviceIdKind, DeviceRef
from exporter.model.enrichment import AllocationSeries, UnallocatedUse
from exporter.model.pods import PodDirectory, PodInfo
from exporter.model.snapshot import PodGpuSeries
from guardian_common.grouping import GroupingOptions

MAIN_ID = "a" * 64
SIDECAR_ID = "b" * 64
TRAIN = PodInfo(
    "uid-train",
    "ml",
    "train-0",
    "Running",
    {"prjId": "proj-a", "tier": "gold"},
    container_names={MAIN_ID: "main"},
)
NOTEBOOK = PodInfo("uid-nb", "ml", "notebook-0", "Running", {"app": "jupyter"})
GPU_INDEX = {"GPU-a": "0", "GPU-b": "1", "MIG-c": "2/1"}


def _ref(uuid: str) -> DeviceRef:
    kind = DeviceIdKind.MIG if uuid.startswith("MIG-") else DeviceIdKind.GPU
    return DeviceRef(uuid, uuid, kind)


def _series(pod_uid: str, uuid: str, container_id: str = MAIN_ID) -> PodGpuSeries:
    return PodGpuSeries(
        gpu=GPU_INDEX[uuid],
        uuid=uuid,
        pod_uid=pod_uid,
        container_id=container_id,
        memory_used_bytes=1,
        sm_utilization_ratio=0.5,
        processes=1,
        last_active_timestamp_seconds=None,
        vgpu_memory_allocated_bytes=None,
    )


def _input(
    allocations: list[Allocation],
    series: list[PodGpuSeries],
    *,
    identified: bool = True,
    finished: frozenset[tuple[str, str]] = frozenset(),
) -> EnrichmentInput:
    directory = PodDirectory(
        by_uid={p.uid: p for p in (TRAIN, NOTEBOOK)}, finished=finished, up=True, synced=True
    )
    return EnrichmentInput(directory, allocations, identified, GPU_INDEX, series)


def test_pod_series_get_names_group_and_allowlisted_labels() -> None:
    grouping = GroupingOptions(group_label="prjId", allowlist_regex="prjId|tier|app")

    result = enrich(_input([], []), grouping, kube_up=True)

    assert result.label_names == ("namespace", "pod", "gpu_group", "app", "prjId", "tier")
    assert result.pod_labels == {
        "uid-train": ("ml", "train-0", "proj-a", "", "proj-a", "gold"),
        "uid-nb": ("ml", "notebook-0", "unassigned", "jupyter", "", ""),
    }
    assert result.kube_up is True


def test_cluster_is_not_an_enrichment_label_but_a_node_wide_one() -> None:
    # metrics.node_labels adds it to every series (tests/unit/exporter/core/test_metrics.py).
    grouping = GroupingOptions(group_label="prjId", cluster_name="prod")

    result = enrich(_input([], []), grouping, kube_up=True)

    assert result.label_names == ("namespace", "pod", "gpu_group", "prjId")
    assert result.pod_labels["uid-nb"] == ("ml", "notebook-0", "unassigned", "")
    assert result.unknown_pod == ("", "", "", "")


def test_containers_are_named_from_the_pod_status_where_it_lists_their_id() -> None:
    series = [
        _series("uid-train", "GPU-a"),
        _series("uid-train", "GPU-a", SIDECAR_ID),  # not (yet) in the pod's status
        _series("uid-nb", "GPU-b"),  # the notebook pod lists no container IDs
        _series("uid-unknown", "GPU-b"),  # a pod the API does not know
    ]

    result = enrich(_input([], series), GroupingOptions(group_label="prjId"), kube_up=True)

    assert result.container_names == {("uid-train", MAIN_ID): "main"}


def test_every_allocation_is_a_series_even_without_a_process() -> None:
    allocations = [
        Allocation("ml", "train-0", "main", "nvidia.com/gpu", _ref("GPU-a")),
        Allocation("ml", "notebook-0", "nb", "nvidia.com/gpu", _ref("GPU-b")),
        Allocation("ml", "ghost-0", "x", "nvidia.com/mig-1g.10gb", _ref("MIG-c")),
        Allocation("ml", "done-0", "x", "nvidia.com/gpu", _ref("GPU-b")),
    ]
    grouping = GroupingOptions(group_label="prjId")

    result = enrich(
        _input(
            allocations, [_series("uid-train", "GPU-a")], finished=frozenset({("ml", "done-0")})
        ),
        grouping,
        kube_up=True,
    )

    assert result.allocations == (
        AllocationSeries(
            "0",
            "GPU-a",
            "ml",
            "train-0",
            "main",
            "nvidia.com/gpu",
            ("ml", "train-0", "proj-a", "proj-a"),
        ),
        AllocationSeries(
            "1",
            "GPU-b",
            "ml",
            "notebook-0",
            "nb",
            "nvidia.com/gpu",
            ("ml", "notebook-0", "unassigned", ""),
        ),
        # The API does not know the pod yet: the group stays empty, not "unassigned".
        AllocationSeries(
            "2/1",
            "MIG-c",
            "ml",
            "ghost-0",
            "x",
            "nvidia.com/mig-1g.10gb",
            ("ml", "ghost-0", "", ""),
        ),
    )


def test_limits_fallback_exports_counts_without_identity() -> None:
    allocations = [Allocation("ml", "train-0", "main", "nvidia.com/gpu", None, 4)]

    result = enrich(
        _input(allocations, [_series("uid-train", "GPU-b")], identified=False),
        GroupingOptions(group_label="prjId"),
        kube_up=True,
    )

    (series,) = result.allocations
    assert (series.gpu, series.uuid, series.value) == ("", "", 4.0)
    # Without device identity nothing can be called unallocated.
    assert result.unallocated_use == ()


def test_process_on_a_gpu_the_pod_does_not_hold_is_flagged() -> None:
    allocations = [Allocation("ml", "train-0", "main", "nvidia.com/gpu", _ref("GPU-a"))]
    series = [
        _series("uid-train", "GPU-a"),
        _series("uid-train", "GPU-b"),
        _series("uid-unknown", "GPU-b"),
    ]

    result = enrich(_input(allocations, series), GroupingOptions(group_label="prjId"), True)

    assert result.unallocated_use == (
        UnallocatedUse(
            "1", "GPU-b", "uid-train", "main", MAIN_ID, ("ml", "train-0", "proj-a", "proj-a")
        ),
    )


def test_colliding_label_keys_are_withheld_and_reported() -> None:
    pod = PodInfo("uid-x", "ml", "x-0", "Running", {"team.id": "a", "team-id": "b", "prjId": "p"})
    directory = PodDirectory(by_uid={"uid-x": pod}, up=True, synced=True)
    grouping = GroupingOptions(group_label="prjId", allowlist_regex=".*")

    result = enrich(EnrichmentInput(directory, [], True, {}, []), grouping, kube_up=False)

    assert result.label_names == ("namespace", "pod", "gpu_group", "prjId")
    assert result.collisions == {"team_id": ("team-id", "team.id")}
    assert result.kube_up is False
