"""Builders for planner inputs: alerts, policies, workloads and snapshots."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from guardian.model.labels import LabelSet
from guardian.model.policies import ReclaimPolicy
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    HpaState,
    MemberPod,
    NamespaceState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import WorkloadRef

NOW = 1_700_100_000.0
GROUPS = ("idle", "pipeline")


def policy(name: str = "p", **spec: Any) -> ReclaimPolicy:
    return ReclaimPolicy.model_validate(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ReclaimPolicy",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def enforce(name: str = "p", **spec: Any) -> ReclaimPolicy:
    spec.setdefault("ladder", {"gracePeriod": "1h"})
    spec.setdefault("warmup", "10m")
    spec.setdefault("mode", "enforce")
    return policy(name, **spec)


def alert(
    pod: str = "web-1",
    namespace: str = "ml",
    *,
    name: str = "GpuIdle",
    node: str = "n1",
    active_at: float = NOW - 7200,
    firing: bool = True,
    cls: str = "reclaimable",
    **labels: str,
) -> FiringAlert:
    base = {"alertname": name, "guardian_class": cls, "node": node, "cluster": "c1"}
    if pod:
        base |= {"namespace": namespace, "pod": pod}
    return FiringAlert(LabelSet({**base, **labels}), active_at, firing, group="idle")


def pipeline_alert(name: str = "GpuExporterStale", node: str | None = "n1") -> FiringAlert:
    labels = {"alertname": name, "guardian_class": "pipeline", "cluster": "c1"}
    if node is not None:
        labels["node"] = node
    return FiringAlert(LabelSet(labels), NOW - 600, True, group="pipeline")


def ref(name: str = "web", namespace: str = "ml", kind: str = "Deployment") -> WorkloadRef:
    api = {
        "Deployment": "apps/v1",
        "StatefulSet": "apps/v1",
        "Job": "batch/v1",
        "CronJob": "batch/v1",
        "Notebook": "kubeflow.org/v1",
        "Pod": "v1",
        "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    }[kind]
    return WorkloadRef(api, kind, namespace, name)


def workload(
    r: WorkloadRef | None = None,
    *,
    action: ActionKind = ActionKind.SCALE,
    replicas: int | None = 1,
    created_at: float = NOW - 86400,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    hpa: HpaState | None = None,
    suspended: bool = False,
    members: tuple[MemberPod, ...] | None = None,
) -> WorkloadState:
    return WorkloadState(
        ref=r or ref(),
        uid="uid-1",
        resource_version="10",
        created_at=created_at,
        action=action,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        replicas=replicas,
        suspended=suspended,
        hpa=hpa,
        members=members,
    )


def member(
    name: str = "web-1",
    *,
    gpus: int = 1,
    created_at: float = NOW - 86400,
    phase: str = "Running",
    deleting: bool = False,
    resource: str = "nvidia.com/gpu",
) -> MemberPod:
    """A pod of a root as the reader reports it (Running for a day, holding ``gpus``)."""
    return MemberPod(
        name, f"uid-{name}", created_at, phase, "n1", deleting, {resource: gpus} if gpus else {}
    )


def snapshot(
    *states: WorkloadState,
    pods: Mapping[tuple[str, str], WorkloadRef | None] | None = None,
    namespaces: Mapping[str, Mapping[str, Any]] | None = None,
    controller_namespace: str = "gpu-guardian",
) -> ClusterSnapshot:
    if not states:
        states = (workload(),)
    owners: dict[tuple[str, str], PodOwner] = {}
    for (ns, pod), root in (pods or {("ml", "web-1"): states[0].ref}).items():
        owners[(ns, pod)] = PodOwner(ns, pod, root, None if root else "not found")
    # A workload built without its pods owns the alerts' pods, one GPU each, and runs as
    # (the whole-workload evidence tests give theirs explicitly).
    states = tuple(s if s.members is not None else _with_members(s, owners) for s in states)
    spaces = {s.ref.namespace: NamespaceState(s.ref.namespace) for s in states}
    spaces[controller_namespace] = NamespaceState(controller_namespace)
    for name, meta in (namespaces or {}).items():
        spaces[name] = NamespaceState(name, meta.get("labels", {}), meta.get("annotations", {}))
    return ClusterSnapshot({s.ref: s for s in states}, spaces, owners, controller_namespace)


def _with_members(ws: WorkloadState, owners: Mapping[tuple[str, str], PodOwner]) -> WorkloadState:
    names = sorted(pod for (_ns, pod), o in owners.items() if o.root == ws.ref)
    return dataclasses.replace(ws, members=tuple(member(n) for n in names))


def healthy(now: float = NOW) -> dict[str, GroupHealth]:
    return {g: GroupHealth(g, now - 30, True) for g in GROUPS}
