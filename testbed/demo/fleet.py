"""The demo's simulated fleet: 3 nodes x 4 GPUs and the workloads on them; node3 is a
time-sliced node, whose GPU 0 two pods share (each holds a replica of it).

One description feeds all three views of the same cluster, so they agree by
construction: the exporter scenarios (GPUs and the processes in pod cgroups), the
fake kubelets' pod-resources answers (which pod holds which GPU) and the fake
Kubernetes API's objects (whose pod UIDs are the ones the cgroups name).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import yaml

GROUP_LABEL = "gpu-guardian.io/group"
GPU_MODEL = "NVIDIA A100-SXM4-80GB"
GPUS_PER_NODE = 4
NODES = ("node1", "node2", "node3")
# The node whose exporter the demo kills partway through.
DOOMED_NODE = "node2"
# The node whose GPU 0 is time-sliced: the device plugin gives each pod a replica of it.
TIME_SLICED_NODE = "node3"
_GIB = 1 << 30
_NS = uuid.UUID("6f1c2b1e-8a4d-4d61-9d0e-3c8f0c9a5b7d")


def stable_uid(*parts: str) -> str:
    """A UUID derived from names, so every run (and every view) uses the same one."""
    return str(uuid.uuid5(_NS, "/".join(parts)))


def gpu_uuid(node: str, index: int) -> str:
    return "GPU-" + stable_uid("gpu", node, str(index))


def device_id(node: str, placement: Placement) -> str:
    """The device ID the kubelet reports: the GPU's UUID, ``::<n>`` for a time-slice replica."""
    uuid = gpu_uuid(node, placement.gpu)
    return uuid if placement.replica is None else f"{uuid}::{placement.replica}"


def container_id(pod_uid: str) -> str:
    return hashlib.sha256(pod_uid.encode()).hexdigest()


@dataclass(frozen=True)
class Activity:
    """A GPU process: memory held and SM use, which may drop to 0 at ``idle_from``."""

    memory_gib: float
    sm_percent: float
    idle_from: float | None = None  # seconds after the exporter started


@dataclass(frozen=True)
class Placement:
    """One pod of a workload on one GPU. ``activity`` None: it holds the GPU, no process.
    ``replica``: the time-slice replica it holds (the GPU is shared), None: the whole GPU."""

    pod: str
    node: str
    gpu: int
    activity: Activity | None
    replica: int | None = None


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    kind: str  # Deployment or Pod (a bare pod)
    group: str | None  # the gpu-guardian.io/group label; None: no label
    placements: tuple[Placement, ...]
    role: str  # what the demo expects of it, for the timeline

    @property
    def replicas(self) -> int:
        return len(self.placements)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"

    def pod_uid(self, pod: str) -> str:
        return stable_uid("pod", self.namespace, pod)


TRAINING = Workload(
    "ml",
    "train-llm",
    "Deployment",
    "a100-training",
    (
        Placement("train-llm-5c7d9-abcde", "node1", 0, Activity(60, 92)),
        Placement("train-llm-5c7d9-fghij", "node2", 0, Activity(60, 90)),
    ),
    "busy training: never touched",
)
NOTEBOOK = Workload(
    "research",
    "notebook-alice",
    "Deployment",
    "research-notebooks",
    (Placement("notebook-alice-6f4b8-k2p9x", "node1", 1, None),),
    "idle notebook, holds a GPU with no process: notified, annotated, reclaimed",
)
INFERENCE = Workload(
    "serving",
    "bert-inference",
    "Deployment",
    "serving",
    (Placement("bert-inference-7b9c4-q8r2t", "node1", 2, Activity(4, 45)),),
    "inference using little memory: GpuMemoryUnderutilized, notify only",
)
UNLABELLED = Workload(
    "batch",
    "render-adhoc",
    "Pod",
    None,
    (Placement("render-adhoc", "node1", 3, Activity(30, 70)),),
    "bare pod without the group label: gpu_group=unassigned",
)
SWEEP = Workload(
    "research",
    "eval-sweep",
    "Deployment",
    "research-notebooks",
    (Placement("eval-sweep-8d2f6-m4n7v", "node2", 1, Activity(3, 85, idle_from=20)),),
    "goes idle on node2, whose exporter dies: never reclaimed",
)
# node3's GPU 0 is time-sliced between a busy API and an idle notebook that loaded a model.
CHAT = Workload(
    "serving",
    "chat-api",
    "Deployment",
    "serving",
    (Placement("chat-api-6c9d7-w4x8z", TIME_SLICED_NODE, 0, Activity(20, 75), replica=0),),
    "busy on a time-sliced GPU: its idle neighbour is reported, it is untouched",
)
SHARED_NOTEBOOK = Workload(
    "research",
    "notebook-bob",
    "Deployment",
    "research-notebooks",
    (Placement("notebook-bob-7a1c2-h5j6k", TIME_SLICED_NODE, 0, Activity(6, 0), replica=1),),
    "idle on its half of a time-sliced GPU: GpuShareIdle, notified with its share",
)
WORKLOADS = (TRAINING, NOTEBOOK, INFERENCE, UNLABELLED, SWEEP, CHAT, SHARED_NOTEBOOK)
NAMESPACES = ("ml", "research", "serving", "batch")
# Namespaces the enforcing policy may act in (its namespaceSelector's label).
RECLAIM_NAMESPACES = ("ml", "research", "serving")


def placements_on(node: str) -> list[tuple[Workload, Placement]]:
    return [(w, p) for w in WORKLOADS for p in w.placements if p.node == node]


def scenario(node: str, idle: Collection[str] = ()) -> dict[str, Any]:
    """The exporter's scenario for ``node`` (docs/exporter.md, "Scenario files").
    Workloads named in ``idle`` hold their GPUs with no process (another cluster's
    same-named workload, in the deployment-matrix test)."""
    gpus = [
        {
            "uuid": gpu_uuid(node, i),
            "model": GPU_MODEL,
            "memory_total": "80GiB",
            "memory_overhead": "512MiB",
        }
        for i in range(GPUS_PER_NODE)
    ]
    processes = []
    for n, (workload, placement) in enumerate(placements_on(node)):
        act = placement.activity
        if act is None or workload.name in idle:
            continue
        pod_uid = workload.pod_uid(placement.pod)
        sm: float | list[dict[str, float]] = act.sm_percent
        if act.idle_from is not None:
            sm = [{"at": 0, "percent": act.sm_percent}, {"at": act.idle_from, "percent": 0}]
        processes.append(
            {
                "pid": 40_000 + 100 * NODES.index(node) + n,
                "gpu": gpu_uuid(node, placement.gpu),
                "memory": int(act.memory_gib * _GIB),
                "sm_percent": sm,
                "pod_uid": pod_uid,
                "container_id": container_id(pod_uid),
                "qos": "guaranteed",
            }
        )
    return {
        "version": 1,
        "sample_period_seconds": 1.0,
        "node": {"cgroup_driver": "systemd", "cgroup_version": 2, "runtime": "containerd"},
        "gpus": gpus,
        "processes": processes,
    }


def scenario_yaml(node: str, idle: Collection[str] = ()) -> str:
    header = f"# Generated by the demo (`make demo`): node {node} of the simulated fleet.\n"
    return header + yaml.safe_dump(scenario(node, idle), sort_keys=False)
