"""The demo's Kubernetes: the fake API server seeded with the fleet, fake kubelets, and
the one controller behaviour the demo needs.

No controllers run in the fake API, so scaling a Deployment changes no pods. The demo
plays the ReplicaSet controller and the kubelet for process-less pods (the idle
notebook): scaled to 0, its pod is deleted and its GPU freed in the kubelet's
pod-resources answer; scaled back, a new pod gets the same GPU. Simulated processes are
fixed by the scenario, so workloads with GPU processes are never scaled here.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from exporter.model.allocation import ContainerDevices
from guardian.model.times import rfc3339
from testbed.demo.fleet import (
    GROUP_LABEL,
    NAMESPACES,
    NODES,
    RECLAIM_NAMESPACES,
    WORKLOADS,
    Placement,
    Workload,
    container_id,
    device_id,
    stable_uid,
)
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.node.kubelet import FakeKubelet

logger = logging.getLogger(__name__)

CONTROLLER_NAMESPACE = "gpu-guardian"
RECLAIM_LABEL = "gpu-guardian.io/reclaim"
GPU_RESOURCE = "nvidia.com/gpu"
# Seeded objects look a day old, older than the policy's warm-up.
_AGE = timedelta(days=1)


@dataclass
class PodSlot:
    """A running pod of a workload, on the GPU its placement names."""

    workload: Workload
    placement: Placement
    name: str


@dataclass
class DemoCluster:
    kube: FakeKubeAPI
    kubelets: dict[str, FakeKubelet]
    clock: Callable[[], float]
    slots: list[PodSlot] = field(default_factory=list)
    # (namespace, name) -> pods of a Deployment the demo scales (process-less only).
    scalable: dict[tuple[str, str], list[Placement]] = field(default_factory=dict)
    owners: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    # ------------------------------------------------------------ seeding
    def seed(self) -> None:
        created = rfc3339(self.clock() - _AGE.total_seconds())
        for ns in NAMESPACES:
            labels = {RECLAIM_LABEL: "true"} if ns in RECLAIM_NAMESPACES else None
            self.kube.create(_aged(b.namespace(ns, labels=labels), created))
        self.kube.create(_aged(b.namespace(CONTROLLER_NAMESPACE), created))
        for workload in WORKLOADS:
            self._seed_workload(workload, created)
        self.publish_devices()

    def _seed_workload(self, w: Workload, created: str) -> None:
        labels = {"app": w.name, **({GROUP_LABEL: w.group} if w.group else {})}
        owners: list[dict[str, Any]] = []
        if w.kind == "Deployment":
            dep = b.deployment(w.name, w.namespace, replicas=w.replicas)
            dep["spec"]["template"]["metadata"]["labels"] = labels
            dep["metadata"]["uid"] = stable_uid("deployment", w.namespace, w.name)
            dep = self.kube.create(_aged(dep, created))
            rs_name = w.placements[0].pod.rsplit("-", 1)[0]
            rs = b.replicaset(rs_name, w.namespace, owners=[b.owner_reference(dep)])
            rs["metadata"]["uid"] = stable_uid("replicaset", w.namespace, rs_name)
            rs = self.kube.create(_aged(rs, created))
            owners = [b.owner_reference(rs)]
            self.owners[(w.namespace, w.name)] = rs
            if all(p.activity is None for p in w.placements):
                self.scalable[(w.namespace, w.name)] = list(w.placements)
        for placement in w.placements:
            self._create_pod(w, placement, placement.pod, owners, created)

    def _create_pod(
        self,
        w: Workload,
        placement: Placement,
        name: str,
        owners: list[dict[str, Any]],
        created: str,
    ) -> None:
        labels = {"app": w.name, **({GROUP_LABEL: w.group} if w.group else {})}
        pod = b.pod(name, w.namespace, node=placement.node, labels=labels, owners=owners)
        # The UID the scenario's cgroups carry (a recreated pod gets a new one).
        uid = w.pod_uid(placement.pod) if name == placement.pod else stable_uid("pod", name)
        pod["metadata"]["uid"] = uid
        # The kubelet's report: the exporter names a process's container from its ID.
        container = pod["spec"]["containers"][0]
        pod["status"]["containerStatuses"] = [
            {
                "name": container["name"],
                "containerID": f"containerd://{container_id(uid)}",
                "image": container["image"],
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": created}},
            }
        ]
        self.kube.create(_aged(pod, created))
        self.slots.append(PodSlot(w, placement, name))

    def publish_devices(self) -> None:
        """Tell each node's kubelet which pod holds which GPU."""
        for node, kubelet in self.kubelets.items():
            kubelet.set_devices(
                ContainerDevices(
                    s.workload.namespace,
                    s.name,
                    "main",
                    GPU_RESOURCE,
                    (device_id(node, s.placement),),
                )
                for s in self.slots
                if s.placement.node == node
            )

    # ------------------------------------------------------------ the controller's part
    def sync(self) -> list[str]:
        """Match the pods of scalable Deployments to their ``spec.replicas``; returns what
        changed, for the timeline."""
        changes: list[str] = []
        for (ns, name), placements in self.scalable.items():
            dep = self.kube.get("Deployment", name, ns)
            want = int(dep["spec"].get("replicas", 1))
            running = [
                s for s in self.slots if (s.workload.namespace, s.workload.name) == (ns, name)
            ]
            for slot in running[want:]:
                self.kube.delete("Pod", slot.name, ns)
                self.slots.remove(slot)
                changes.append(
                    f"pod {ns}/{slot.name} deleted, GPU {slot.placement.gpu} on "
                    f"{slot.placement.node} freed"
                )
            for placement in placements[len(running) : want]:
                workload = running[0].workload if running else _workload(ns, name)
                new = f"{placement.pod.rsplit('-', 1)[0]}-{secrets.token_hex(3)[:5]}"
                created = rfc3339(self.clock())
                rs = self.owners[(ns, name)]
                self._create_pod(workload, placement, new, [b.owner_reference(rs)], created)
                changes.append(f"pod {ns}/{new} created on {placement.node}, GPU {placement.gpu}")
        if changes:
            self.publish_devices()
        return changes


def _workload(ns: str, name: str) -> Workload:
    return next(w for w in WORKLOADS if (w.namespace, w.name) == (ns, name))


def _aged(obj: dict[str, Any], created: str) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = created
    return obj


def start_kubelets(socket_dir: Path) -> dict[str, FakeKubelet]:
    """One fake kubelet per node, on a short unix-socket path."""
    started: dict[str, FakeKubelet] = {}
    try:
        for node in NODES:
            started[node] = FakeKubelet(socket_dir / f"{node}.sock").start()
    except BaseException:
        for kubelet in started.values():
            kubelet.stop()
        raise
    return started


def deployment_state(kube: FakeKubeAPI, ns: str, name: str) -> tuple[int, Mapping[str, str]]:
    """``spec.replicas`` and the gpu-guardian.io annotations of a Deployment."""
    obj = kube.get("Deployment", name, ns)
    annotations = obj["metadata"].get("annotations") or {}
    ours = {k: v for k, v in annotations.items() if k.startswith("gpu-guardian.io/")}
    return int(obj["spec"].get("replicas", 1)), ours
