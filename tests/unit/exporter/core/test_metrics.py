"""The rendered exposition: node-wide labels on every series, container names and IDs."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.app.metrics import RenderedSnapshot
from exporter.model.enrichment import AllocationSeries, Enrichment, UnallocatedUse
from exporter.model.readings import MigState
from exporter.model.snapshot import (
    ErrorCount,
    ExporterHealth,
    GpuSeries,
    PodGpuSeries,
    Snapshot,
    empty_snapshot,
)

Samples = list[tuple[str, dict[str, str], float]]
MAIN_ID = "a" * 64
OTHER_ID = "b" * 64
HEALTH = ExporterHealth(
    nvml_up=True,
    last_success_timestamp_seconds=100.0,
    stage_seconds=(("nvml", 0.01), ("attribution", 0.002)),
    errors=(ErrorCount("power_usage", "not_supported", 1),),
)
GPU = GpuSeries(
    index="0",
    uuid="GPU-a",
    model="NVIDIA A100-SXM4-80GB",
    mig=MigState.DISABLED,
    memory_used_bytes=1 << 30,
    memory_total_bytes=80 << 30,
    utilization_ratio=0.5,
    busy_seconds_total=10.0,
    temperature_celsius=40.0,
    power_watts=100.0,
    energy_joules_total=1000.0,
    unattributed_memory_used_bytes=0,
    unattributed_processes=0,
    last_active_timestamp_seconds=98.0,
    observed_since_timestamp_seconds=10.0,
    memory_used_peak_bytes=float(8 << 30),
    utilization_peak_ratio=0.75,
)


def _pod(pod_uid: str, container_id: str) -> PodGpuSeries:
    return PodGpuSeries(
        gpu="0",
        uuid="GPU-a",
        pod_uid=pod_uid,
        container_id=container_id,
        memory_used_bytes=1 << 20,
        sm_utilization_ratio=0.25,
        processes=1,
        last_active_timestamp_seconds=99.0,
        vgpu_memory_allocated_bytes=40e9,
        observed_since_timestamp_seconds=50.0,
    )


PODS = (_pod("uid-train", MAIN_ID), _pod("uid-train", OTHER_ID), _pod("uid-ghost", MAIN_ID))
ENRICHMENT = Enrichment(
    label_names=("namespace", "pod", "gpu_group"),
    pod_labels={"uid-train": ("ml", "train-0", "vision")},
    container_names={("uid-train", MAIN_ID): "main"},
    allocations=(
        AllocationSeries(
            "0", "GPU-a", "ml", "train-0", "main", "nvidia.com/gpu", ("ml", "train-0", "vision")
        ),
    ),
    unallocated_use=(
        UnallocatedUse("0", "GPU-a", "uid-train", "main", MAIN_ID, ("ml", "train-0", "vision")),
    ),
    kube_up=True,
    cluster_uid="5f0c2a4e-0f5e-4a8a-9d55-2b1f3c0e7a11",
)
FULL = Snapshot(
    node="gpu-node-1",
    driver_version="550.54.15",
    taken_at=100.0,
    gpus=(GPU,),
    pods=PODS,
    health=HEALTH,
    enrichment=ENRICHMENT,
)
# Every family a snapshot can render, so a new one cannot slip past the label checks.
FAMILIES = {
    "guardian_gpu_info",
    "guardian_gpu_utilization_ratio",
    "guardian_gpu_memory_used_bytes",
    "guardian_gpu_memory_total_bytes",
    "guardian_gpu_temperature_celsius",
    "guardian_gpu_power_watts",
    "guardian_gpu_unattributed_memory_used_bytes",
    "guardian_gpu_unattributed_processes",
    "guardian_gpu_busy_seconds_total",
    "guardian_gpu_energy_joules_total",
    "guardian_gpu_last_active_timestamp_seconds",
    "guardian_gpu_observed_since_timestamp_seconds",
    "guardian_gpu_memory_used_peak_bytes",
    "guardian_gpu_utilization_peak_ratio",
    "guardian_pod_gpu_memory_used_bytes",
    "guardian_pod_gpu_sm_utilization_ratio",
    "guardian_pod_gpu_processes",
    "guardian_pod_gpu_last_active_timestamp_seconds",
    "guardian_pod_gpu_observed_since_timestamp_seconds",
    "guardian_pod_vgpu_memory_allocated_bytes",
    "guardian_pod_gpu_allocated",
    "guardian_pod_gpu_unallocated_use",
    "guardian_exporter_kube_up",
    "guardian_exporter_cluster_info",
    "guardian_exporter_nvml_up",
    "guardian_exporter_snapshot_stale",
    "guardian_exporter_last_success_timestamp_seconds",
    "guardian_exporter_collect_duration_seconds",
    "guardian_exporter_errors_total",
}


def render(snapshot: Snapshot) -> Samples:
    body, _ = RenderedSnapshot(snapshot).body(None)
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    ]


def _of(samples: Samples, name: str) -> list[dict[str, str]]:
    return [labels for n, labels, _ in samples if n == name]


@pytest.mark.parametrize(
    "snapshot",
    [FULL, dataclasses.replace(FULL, enrichment=None), empty_snapshot("gpu-node-1", HEALTH, 1.0)],
    ids=["kubernetes", "kubernetes-off", "nvml-down"],
)
def test_cluster_and_node_are_on_every_series_when_set(snapshot: Snapshot) -> None:
    samples = render(dataclasses.replace(snapshot, cluster="prod-eu"))

    assert samples
    for name, labels, _ in samples:
        assert (labels.get("node"), labels.get("cluster")) == ("gpu-node-1", "prod-eu"), name


def test_every_family_is_rendered_and_labelled() -> None:
    samples = render(dataclasses.replace(FULL, cluster="prod-eu"))

    assert {name for name, _, _ in samples} == FAMILIES


def test_without_a_cluster_name_no_series_has_a_cluster_label() -> None:
    samples = render(FULL)

    assert {name for name, _, _ in samples} == FAMILIES
    assert all(
        "cluster" not in labels and labels["node"] == "gpu-node-1" for _, labels, _ in samples
    )


def test_cluster_info_carries_the_cluster_uid_once_it_is_read() -> None:
    """The kube-system Namespace's UID, with the node-wide labels (issue #28)."""
    [info] = _of(
        render(dataclasses.replace(FULL, cluster="prod-eu")), "guardian_exporter_cluster_info"
    )
    assert info == {
        "node": "gpu-node-1",
        "cluster": "prod-eu",
        "cluster_uid": "5f0c2a4e-0f5e-4a8a-9d55-2b1f3c0e7a11",
    }
    unread = dataclasses.replace(ENRICHMENT, cluster_uid="")
    assert (
        _of(render(dataclasses.replace(FULL, enrichment=unread)), "guardian_exporter_cluster_info")
        == []
    )
    # Without Kubernetes (no API access) there is no UID to report.
    assert (
        _of(render(dataclasses.replace(FULL, enrichment=None)), "guardian_exporter_cluster_info")
        == []
    )


def test_a_pod_the_api_does_not_know_keeps_its_series_and_the_node_wide_labels() -> None:
    samples = render(dataclasses.replace(FULL, cluster="prod-eu"))

    [ghost] = [
        lbl
        for lbl in _of(samples, "guardian_pod_gpu_memory_used_bytes")
        if lbl["pod_uid"] == "uid-ghost"
    ]
    assert ghost == {
        "node": "gpu-node-1",
        "cluster": "prod-eu",
        "gpu": "0",
        "uuid": "GPU-a",
        "pod_uid": "uid-ghost",
        "container": "",
        "container_id": MAIN_ID,
        "namespace": "",
        "pod": "",
        "gpu_group": "",
    }


def test_container_is_the_name_where_known_and_the_id_has_its_own_label() -> None:
    samples = render(FULL)

    pods = {
        (lbl["pod_uid"], lbl["container_id"]): lbl["container"]
        for lbl in _of(samples, "guardian_pod_gpu_processes")
    }
    assert pods == {
        ("uid-train", MAIN_ID): "main",  # named by the pod's status
        ("uid-train", OTHER_ID): "",  # not in the status (yet): no name, never the ID
        ("uid-ghost", MAIN_ID): "",
    }
    # The allocation series and the pod series now join on container.
    [allocated] = _of(samples, "guardian_pod_gpu_allocated")
    [unallocated] = _of(samples, "guardian_pod_gpu_unallocated_use")
    assert allocated["container"] == unallocated["container"] == "main"
    assert unallocated["container_id"] == MAIN_ID


def test_without_kubernetes_containers_are_told_apart_by_their_id() -> None:
    samples = render(dataclasses.replace(FULL, enrichment=None))

    pods = _of(samples, "guardian_pod_gpu_memory_used_bytes")
    keys = [(lbl["pod_uid"], lbl["container"], lbl["container_id"]) for lbl in pods]
    assert len(keys) == len(set(keys)) == 3
    assert {lbl["container"] for lbl in pods} == {""}


def test_idle_facts_carry_the_device_and_pod_labels_and_the_peak_window() -> None:
    """The series an idle rule reads as one sample (issue #33)."""
    samples = render(dataclasses.replace(FULL, memory_peak_window="2h", cluster="prod-eu"))
    device = {"node": "gpu-node-1", "cluster": "prod-eu", "gpu": "0", "uuid": "GPU-a"}
    got = {(n, tuple(sorted(lbl.items()))): v for n, lbl, v in samples}
    for name, labels, value in (
        ("guardian_gpu_last_active_timestamp_seconds", device, 98.0),
        ("guardian_gpu_observed_since_timestamp_seconds", device, 10.0),
        ("guardian_gpu_memory_used_peak_bytes", {**device, "window": "2h"}, 8 << 30),
        ("guardian_gpu_utilization_peak_ratio", {**device, "window": "30m"}, 0.75),
    ):
        assert got[(name, tuple(sorted(labels.items())))] == value, name
    pods = _of(samples, "guardian_pod_gpu_observed_since_timestamp_seconds")
    assert pods == _of(samples, "guardian_pod_gpu_last_active_timestamp_seconds")
    assert len(pods) == 3


def test_idle_facts_not_yet_known_are_absent_not_zero() -> None:
    unknown = dataclasses.replace(
        GPU,
        last_active_timestamp_seconds=None,
        memory_used_peak_bytes=None,
        utilization_peak_ratio=None,
    )
    names = {n for n, _, _ in render(dataclasses.replace(FULL, gpus=(unknown,)))}
    assert "guardian_gpu_observed_since_timestamp_seconds" in names
    assert not names & {
        "guardian_gpu_last_active_timestamp_seconds",
        "guardian_gpu_memory_used_peak_bytes",
        "guardian_gpu_utilization_peak_ratio",
    }
