"""The fleet's three views agree: scenario cgroups, fake API objects and kubelet devices."""

from __future__ import annotations

import time

from exporter.adapters.kube_pods import container_names
from testbed.demo.cluster import DemoCluster, deployment_state
from testbed.demo.fleet import (
    CHAT,
    GROUP_LABEL,
    NODES,
    NOTEBOOK,
    SHARED_NOTEBOOK,
    TIME_SLICED_NODE,
    TRAINING,
    UNLABELLED,
    WORKLOADS,
    device_id,
    gpu_uuid,
    scenario_yaml,
)
from testbed.kubeapi import FakeKubeAPI
from testbed.node.scenario import parse_scenario


class _Kubelet:
    def __init__(self) -> None:
        self.devices: list[object] = []

    def set_devices(self, devices: object) -> None:
        self.devices = list(devices)  # type: ignore[call-overload]


def _cluster(kube: FakeKubeAPI) -> tuple[DemoCluster, dict[str, _Kubelet]]:
    kubelets = {node: _Kubelet() for node in NODES}
    cluster = DemoCluster(kube, kubelets, time.time)  # type: ignore[arg-type]
    cluster.seed()
    return cluster, kubelets


def test_scenario_processes_belong_to_seeded_pods() -> None:
    with FakeKubeAPI.start() as kube:
        _cluster(kube)
        uids = {p["metadata"]["uid"]: p for p in kube.objects("Pod")}
        for node in NODES:
            scenario = parse_scenario(scenario_yaml(node), f"{node}.yaml")
            assert len(scenario.gpus) == 4
            for proc in scenario.processes:
                pod = uids[proc.pod_uid or ""]
                assert pod["spec"]["nodeName"] == node
                assert proc.gpu in {gpu_uuid(node, i) for i in range(4)}


def test_each_process_container_is_named_by_its_pod_status() -> None:
    """The exporter names a process's container from the pod's containerStatuses."""
    with FakeKubeAPI.start() as kube:
        _cluster(kube)
        pods = {p["metadata"]["uid"]: p for p in kube.objects("Pod")}
        for node in NODES:
            for proc in parse_scenario(scenario_yaml(node), f"{node}.yaml").processes:
                names = container_names(pods[proc.pod_uid or ""]["status"])
                assert names == {proc.container_id: "main"}


def test_the_notebook_holds_a_gpu_without_a_process() -> None:
    scenario = parse_scenario(scenario_yaml("node1"), "node1.yaml")
    notebook_gpu = gpu_uuid("node1", NOTEBOOK.placements[0].gpu)
    assert notebook_gpu not in {p.gpu for p in scenario.processes}


def test_kubelets_report_every_pod_on_its_gpu() -> None:
    with FakeKubeAPI.start() as kube:
        _, kubelets = _cluster(kube)
        reported = {
            (d.namespace, d.pod, d.device_ids)  # type: ignore[attr-defined]
            for k in kubelets.values()
            for d in k.devices
        }
        expected = {
            (w.namespace, p.pod, (device_id(p.node, p),)) for w in WORKLOADS for p in w.placements
        }
        assert reported == expected
        # The time-sliced GPU: two pods, each with its own replica of the same GPU.
        shared = {
            d.device_ids  # type: ignore[attr-defined]
            for d in kubelets[TIME_SLICED_NODE].devices
        }
        uuid = gpu_uuid(TIME_SLICED_NODE, 0)
        assert shared == {(f"{uuid}::0",), (f"{uuid}::1",)}


def test_pods_carry_owners_and_the_group_label_except_the_unlabelled_one() -> None:
    with FakeKubeAPI.start() as kube:
        _cluster(kube)
        for w in WORKLOADS:
            for p in w.placements:
                pod = kube.get("Pod", p.pod, w.namespace)
                labels = pod["metadata"].get("labels", {})
                assert (GROUP_LABEL in labels) == (w is not UNLABELLED)
                owners = pod["metadata"].get("ownerReferences", [])
                assert (owners[0]["kind"] if owners else "none") == (
                    "ReplicaSet" if w.kind == "Deployment" else "none"
                )


def test_scaling_the_notebook_frees_its_gpu_and_scaling_back_returns_it() -> None:
    with FakeKubeAPI.start() as kube:
        cluster, kubelets = _cluster(kube)
        assert cluster.sync() == []
        kube.patch("Deployment", NOTEBOOK.name, {"spec": {"replicas": 0}}, NOTEBOOK.namespace)
        [change] = cluster.sync()
        assert "deleted" in change
        assert not kube.objects("Pod", NOTEBOOK.namespace) or all(
            not p["metadata"]["name"].startswith(NOTEBOOK.name)
            for p in kube.objects("Pod", NOTEBOOK.namespace)
        )
        assert all(d.pod != NOTEBOOK.placements[0].pod for d in kubelets["node1"].devices)  # type: ignore[attr-defined]
        kube.patch("Deployment", NOTEBOOK.name, {"spec": {"replicas": 1}}, NOTEBOOK.namespace)
        [change] = cluster.sync()
        assert "created on node1" in change
        assert deployment_state(kube, NOTEBOOK.namespace, NOTEBOOK.name)[0] == 1
        names = [d.pod for d in kubelets["node1"].devices]  # type: ignore[attr-defined]
        assert any(
            n.startswith("notebook-alice-6f4b8-") and n != NOTEBOOK.placements[0].pod for n in names
        )


def test_workloads_with_processes_are_never_scaled_by_the_demo() -> None:
    with FakeKubeAPI.start() as kube:
        cluster, _ = _cluster(kube)
        kube.patch("Deployment", TRAINING.name, {"spec": {"replicas": 0}}, TRAINING.namespace)
        assert cluster.sync() == []
        assert len(kube.objects("Pod", TRAINING.namespace)) == 2


def test_seeded_objects_are_older_than_the_policy_warmup() -> None:
    with FakeKubeAPI.start() as kube:
        _cluster(kube)
        created = kube.get("Deployment", NOTEBOOK.name, NOTEBOOK.namespace)["metadata"][
            "creationTimestamp"
        ]
        assert created < time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))


def test_the_time_sliced_gpu_has_a_busy_and_an_idle_process() -> None:
    scenario = parse_scenario(scenario_yaml(TIME_SLICED_NODE), "node3.yaml")
    on_gpu0 = [p for p in scenario.processes if p.gpu == gpu_uuid(TIME_SLICED_NODE, 0)]
    by_pod = {p.pod_uid: p.sm_at(60) for p in on_gpu0}
    assert by_pod == {
        CHAT.pod_uid(CHAT.placements[0].pod): 75,
        SHARED_NOTEBOOK.pod_uid(SHARED_NOTEBOOK.placements[0].pod): 0,
    }
