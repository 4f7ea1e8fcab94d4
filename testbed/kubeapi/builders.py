"""Small factories for the objects tests and the demo seed: valid as the real API requires."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]


def _meta(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    owners: Sequence[Mapping[str, Any]] = (),
) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if owners:
        meta["ownerReferences"] = [dict(owner) for owner in owners]
    return meta


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True) -> Obj:
    """An ownerReference to a stored ``owner`` (it needs its uid, so seed the owner first)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def pod_template(labels: Mapping[str, str], *, gpus: int = 1, image: str = "trainer:1") -> Obj:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "metadata": {"labels": dict(labels)},
        "spec": {"containers": [{"name": "main", "image": image, "resources": resources}]},
    }


def namespace(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta(name, None, labels, annotations),
    }


def _workload(
    kind: str,
    name: str,
    namespace: str,
    replicas: int,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    owners: Sequence[Mapping[str, Any]],
    gpus: int,
) -> Obj:
    selector = {"app": name}
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": selector},
        "template": pod_template(selector, gpus=gpus),
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": _meta(name, namespace, {**selector, **(labels or {})}, annotations, owners),
        "spec": spec,
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def deployment(
    name: str,
    namespace: str = "default",
    *,
    replicas: int = 1,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    gpus: int = 1,
) -> Obj:
    return _workload("Deployment", name, namespace, replicas, labels, annotations, (), gpus)


def statefulset(
    name: str,
    namespace: str = "default",
    *,
    replicas: int = 1,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
    gpus: int = 1,
) -> Obj:
    return _workload("StatefulSet", name, namespace, replicas, labels, annotations, owners, gpus)


def replicaset(
    name: str,
    namespace: str = "default",
    *,
    replicas: int = 1,
    labels: Mapping[str, str] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
    gpus: int = 1,
) -> Obj:
    return _workload("ReplicaSet", name, namespace, replicas, labels, None, owners, gpus)


def pod(
    name: str,
    namespace: str = "default",
    *,
    node: str | None = None,
    phase: str = "Running",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
    gpus: int = 1,
    ready: bool | None = None,
) -> Obj:
    """A pod as the kubelet reports it: Ready while Running unless ``ready`` says."""
    template = pod_template(labels or {}, gpus=gpus)
    spec = template["spec"]
    if node is not None:
        spec["nodeName"] = node
    is_ready = phase == "Running" if ready is None else ready
    condition = {"type": "Ready", "status": "True" if is_ready else "False"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, namespace, labels, annotations, owners),
        "spec": spec,
        "status": {"phase": phase, "conditions": [condition]},
    }


def job(
    name: str,
    namespace: str = "default",
    *,
    suspend: bool = False,
    labels: Mapping[str, str] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
    gpus: int = 1,
) -> Obj:
    template = pod_template({"job-name": name}, gpus=gpus)
    template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, namespace, labels, None, owners),
        "spec": {"suspend": suspend, "template": template},
    }


def cronjob(
    name: str,
    namespace: str = "default",
    *,
    schedule: str = "0 * * * *",
    suspend: bool = False,
    labels: Mapping[str, str] | None = None,
    gpus: int = 1,
) -> Obj:
    template = pod_template({"cronjob": name}, gpus=gpus)
    template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(name, namespace, labels, None),
        "spec": {
            "schedule": schedule,
            "suspend": suspend,
            "jobTemplate": {"spec": {"template": template}},
        },
    }


def notebook(
    name: str,
    namespace: str = "default",
    *,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    gpus: int = 1,
) -> Obj:
    """A Kubeflow ``kubeflow.org/v1`` Notebook (its controller owns a StatefulSet of one)."""
    template = pod_template({"notebook-name": name}, gpus=gpus)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "Notebook",
        "metadata": _meta(name, namespace, labels, annotations),
        "spec": {"template": {"spec": template["spec"]}},
    }


def lease(
    name: str, namespace: str = "default", *, holder: str | None = None, duration_s: int = 15
) -> Obj:
    spec: Obj = {"leaseDurationSeconds": duration_s}
    if holder is not None:
        spec["holderIdentity"] = holder
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": _meta(name, namespace, None, None),
        "spec": spec,
    }


def hpa(target: Mapping[str, Any], *, min_replicas: int = 1, max_replicas: int = 4) -> Obj:
    """An ``autoscaling/v2`` HorizontalPodAutoscaler of the same name that scales ``target``."""
    meta = target["metadata"]
    ref = {"apiVersion": target["apiVersion"], "kind": target["kind"], "name": meta["name"]}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(meta["name"], meta.get("namespace"), None, None),
        "spec": {"scaleTargetRef": ref, "minReplicas": min_replicas, "maxReplicas": max_replicas},
    }


def node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    allocatable: Mapping[str, str] | None = None,
) -> Obj:
    """A v1 Node (cluster-scoped): its labels, taints and ``status.allocatable`` (default:
    8 CPUs, 64Gi, 110 pods, 8 ``nvidia.com/gpu``). The fake serves Nodes only when a test
    adds ``ResourceType("", "v1", "Node", "nodes", namespaced=False)``."""
    room = allocatable or {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}
    spec: Obj = {"taints": [dict(t) for t in taints]} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(name, None, labels, None),
        "spec": spec,
        "status": {"allocatable": dict(room), "capacity": dict(room)},
    }
