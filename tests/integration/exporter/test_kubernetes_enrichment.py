"""`guardian-exporter serve` with Kubernetes enrichment: the real kubernetes client against the
fake API server, and the real gRPC client against a fake kubelet on a unix socket."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from exporter.model.allocation import ContainerDevices
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.node.kubelet import FakeKubelet
from tests.integration.exporter.conftest import Running, Series

pytestmark = pytest.mark.e2e

SCENARIO = Path(str(resources.files("testbed.node").joinpath("scenarios"))) / "shared-node.yaml"
NODE = "gpu-node-1"
GPU_A = "GPU-6c2a8a4e-3f1b-4c2d-9e8f-0a1b2c3d4e5f"  # index 0
GPU_B = "GPU-7d3b9b5f-4a2c-4d3e-8f90-1b2c3d4e5f60"  # index 1
# Pod UIDs the scenario's processes run in (shared-node.yaml).
TRAIN = "3f6e1a2b-7c8d-4e9f-a0b1-c2d3e4f5a6b7"
NOTEBOOK = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
INFERENCE = "8c7b6a59-4837-4261-9504-a3b2c1d0e9f8"
# Container IDs of those processes, which the pods' statuses list under their names.
TRAIN_ID = "9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
NOTEBOOK_ID = "1f2e3d4c5b6a79880a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f"
INFERENCE_ID = "2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a"
GROUP = "gpu-guardian.io/group"


def _pod(
    name: str,
    uid: str | None,
    labels: dict[str, str],
    gpus: int = 1,
    container: tuple[str, str | None] = ("main", None),
) -> dict[str, Any]:
    pod = b.pod(name, "ml", node=NODE, labels=labels, gpus=gpus)
    if uid is not None:
        pod["metadata"]["uid"] = uid
    container_name, container_id = container
    pod["spec"]["containers"][0]["name"] = container_name
    if container_id is not None:
        pod["status"]["containerStatuses"] = [
            {"name": container_name, "containerID": f"containerd://{container_id}"}
        ]
    return pod


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start(bookmark_interval_s=0.5) as api:
        train_labels = {GROUP: "vision", "team": "ml", "secret": "x"}
        api.create(_pod("train-0", TRAIN, train_labels, container=("main", TRAIN_ID)))
        # The notebook's status does not list its container yet.
        api.create(_pod("notebook-0", NOTEBOOK, {"app": "jupyter"}, container=("nb", None)))
        api.create(_pod("infer-0", INFERENCE, {GROUP: "search"}, container=("srv", INFERENCE_ID)))
        api.create(_pod("idle-0", None, {GROUP: "vision"}, gpus=2))
        api.create(b.pod("elsewhere-0", "ml", node="other-node", labels={GROUP: "x"}))
        yield api


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kubelet") as path:
        yield Path(path)


@pytest.fixture
def kubelet(socket_dir: Path) -> Iterator[FakeKubelet]:
    with FakeKubelet(socket_dir / "kubelet.sock") as server:
        server.set_devices(
            [
                ContainerDevices("ml", "train-0", "main", "nvidia.com/gpu", (GPU_A,)),
                ContainerDevices(
                    "ml", "notebook-0", "nb", "nvidia.com/gpu.shared", (f"{GPU_A}::1",)
                ),
                # The inference pod holds GPU A but its processes run on GPU B.
                ContainerDevices("ml", "infer-0", "srv", "nvidia.com/gpu", (GPU_A,)),
                # Holds GPU B and runs nothing at all: the costliest idle GPU.
                ContainerDevices("ml", "idle-0", "main", "nvidia.com/gpu", (GPU_B,)),
            ]
        )
        yield server


def _serve(
    exporter_process: Callable[..., Running], kube: FakeKubeAPI, tmp_path: Path, socket: Path
) -> Running:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    return exporter_process(
        "--scenario", str(SCENARIO), "--interval", "0.3",
        "--kubeconfig", str(kubeconfig), "--pod-resources-socket", str(socket),
        "--group-label-allowlist", f"{GROUP}|team", "--cluster-name", "prod",
        "--extra-gpu-resources", "nvidia.com/gpu.shared",
        env={"NODE_NAME": NODE},
    )  # fmt: skip


def _by_pod(series: Series, name: str) -> dict[str, dict[str, str]]:
    return {lbl["pod"]: lbl for lbl, _ in series.get(name, []) if lbl.get("pod")}


def test_pod_series_carry_names_group_cluster_and_allowlisted_labels(
    exporter_process: Callable[..., Running],
    kube: FakeKubeAPI,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    running = _serve(exporter_process, kube, tmp_path, kubelet.socket_path)
    got = running.wait_for(
        lambda s: (
            len(_by_pod(s, "guardian_pod_gpu_memory_used_bytes")) == 3
            and ("guardian_exporter_kube_up", 1.0) in [(n, v) for n in s for _, v in s[n]]
            and bool(s.get("guardian_exporter_cluster_info"))
        )
    )
    # The cluster's identity: the kube-system Namespace's UID (issue #28).
    [(info, _)] = got["guardian_exporter_cluster_info"]
    assert info == {
        "cluster": "prod",
        "node": NODE,
        "cluster_uid": kube.get("Namespace", "kube-system")["metadata"]["uid"],
    }

    pods = _by_pod(got, "guardian_pod_gpu_memory_used_bytes")
    train = pods["train-0"]
    assert (train["namespace"], train["gpu_group"], train["team"], train["cluster"]) == (
        "ml",
        "vision",
        "ml",
        "prod",
    )
    assert "secret" not in train  # not allowlisted
    assert train["pod_uid"] == TRAIN
    assert pods["notebook-0"]["gpu_group"] == "unassigned"
    assert pods["infer-0"]["gpu_group"] == "search"

    allocated = {
        (lbl["pod"], lbl["uuid"], lbl["gpu"], lbl["gpu_group"]): v
        for lbl, v in got["guardian_pod_gpu_allocated"]
    }
    assert allocated == {
        ("train-0", GPU_A, "0", "vision"): 1.0,
        ("notebook-0", GPU_A, "0", "unassigned"): 1.0,
        ("infer-0", GPU_A, "0", "search"): 1.0,
        ("idle-0", GPU_B, "1", "vision"): 1.0,  # no process, still visible
    }
    unallocated = [(lbl["pod"], lbl["uuid"]) for lbl, _ in got["guardian_pod_gpu_unallocated_use"]]
    assert unallocated == [("infer-0", GPU_B)]


def test_every_series_carries_the_cluster_and_containers_are_named_as_in_allocations(
    exporter_process: Callable[..., Running],
    kube: FakeKubeAPI,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    running = _serve(exporter_process, kube, tmp_path, kubelet.socket_path)
    got = running.wait_for(
        lambda s: (
            _by_pod(s, "guardian_pod_gpu_memory_used_bytes").get("train-0", {}).get("container")
            == "main"
        )
    )

    for name, samples in got.items():
        for labels, _ in samples:
            assert (labels.get("cluster"), labels.get("node")) == ("prod", NODE), name
    pods = _by_pod(got, "guardian_pod_gpu_memory_used_bytes")
    named = {pod: (lbl["container"], lbl["container_id"]) for pod, lbl in pods.items()}
    assert named == {
        "train-0": ("main", TRAIN_ID),
        "notebook-0": ("", NOTEBOOK_ID),  # not in its status yet: no name, and never the ID
        "infer-0": ("srv", INFERENCE_ID),
    }
    # Pod series now join allocation series on (namespace, pod, container).
    allocated = {
        (lbl["namespace"], lbl["pod"], lbl["container"])
        for lbl, _ in got["guardian_pod_gpu_allocated"]
    }
    assert ("ml", "train-0", "main") in allocated
    assert ("ml", "infer-0", "srv") in allocated
    [unallocated] = [lbl for lbl, _ in got["guardian_pod_gpu_unallocated_use"]]
    assert (unallocated["container"], unallocated["container_id"]) == ("srv", INFERENCE_ID)

    # The kubelet reports the notebook's container: its name follows with the watch event.
    status = {"containerStatuses": [{"name": "nb", "containerID": f"containerd://{NOTEBOOK_ID}"}]}
    kube.patch("Pod", "notebook-0", {"status": status}, namespace="ml")
    got = running.wait_for(
        lambda s: (
            _by_pod(s, "guardian_pod_gpu_memory_used_bytes")["notebook-0"]["container"] == "nb"
        )
    )
    assert _by_pod(got, "guardian_pod_gpu_memory_used_bytes")["notebook-0"]["container_id"] == (
        NOTEBOOK_ID
    )


def test_api_outage_keeps_serving_and_reports_kube_down(
    exporter_process: Callable[..., Running],
    kube: FakeKubeAPI,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    running = _serve(exporter_process, kube, tmp_path, kubelet.socket_path)
    running.wait_for(lambda s: len(_by_pod(s, "guardian_pod_gpu_memory_used_bytes")) == 3)

    kube.fail_next(503, path="/api/v1/pods", times=None)
    kube.end_watches()
    got = running.wait_for(
        lambda s: [v for _, v in s.get("guardian_exporter_kube_up", [])] == [0.0], timeout=30
    )

    # The last known pods keep their names; GPU series go on.
    assert _by_pod(got, "guardian_pod_gpu_memory_used_bytes")["train-0"]["gpu_group"] == "vision"
    assert got["guardian_gpu_memory_used_bytes"]


def test_without_the_kubelet_socket_limits_give_counts_without_identity(
    exporter_process: Callable[..., Running],
    kube: FakeKubeAPI,
    socket_dir: Path,
    tmp_path: Path,
) -> None:
    running = _serve(exporter_process, kube, tmp_path, socket_dir / "absent.sock")
    got = running.wait_for(lambda s: len(_by_pod(s, "guardian_pod_gpu_allocated")) == 4)

    allocated = {
        lbl["pod"]: (lbl["uuid"], lbl["gpu"], v) for lbl, v in got["guardian_pod_gpu_allocated"]
    }
    assert allocated["idle-0"] == ("", "", 2.0)
    assert allocated["train-0"] == ("", "", 1.0)
    assert "elsewhere-0" not in allocated
    assert got.get("guardian_pod_gpu_unallocated_use", []) == []
