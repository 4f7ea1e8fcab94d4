"""The cluster as the replay sees it: read from the API, or guessed from the series.

With ``--from-cluster`` each alert's pod is walked to its root owner through the API
(``KubeReader``), as the controller does; pods that no longer exist are matched to a
workload by their name and that workload is read if it still exists. Without cluster
access the workload is guessed from the pod's name alone, with no labels and no
annotations (so label selectors and exclusion annotations cannot apply), and the report
says so. The controller's own marks on a workload (flagged, reclaimed, restored) say
what happened lately, not during the replayed range, and are dropped either way.

The members given here are the pods its alerts name over the range, each counted as
holding its GPUs all along: what the replay starts from. The cluster now holds other pods
than the history did, so when the planner judges a workload's reclaim the replay reads
the pods it had at the time from the allocation history (reclaimed_usage.py), a replica
that never alerted included; these members stay only for a workload none of whose pods
is in that history.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from guardian.adapters.kube.reader import KubeReader
from guardian.engine.simulate.identity import workload_from_pod
from guardian.model.policies import Annotations
from guardian.model.reclaim import (
    ClusterSnapshot,
    MemberPod,
    NamespaceState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import WorkloadRef
from guardian_common.errors import GuardianError
from guardian_common.words import plural

logger = logging.getLogger(__name__)

_OURS = (*Annotations.FLAG_KEYS, *Annotations.RECLAIM_KEYS, Annotations.RESTORED_AT)


@dataclass(frozen=True)
class Workloads:
    snapshot: ClusterSnapshot
    source: str  # one line for the report: where identities came from
    guessed: int = 0  # pods whose workload was guessed from their name


def from_series(pods: Iterable[tuple[str, str]], controller_namespace: str) -> Workloads:
    owners: dict[tuple[str, str], PodOwner] = {}
    workloads: dict[WorkloadRef, WorkloadState] = {}
    pods_of: dict[WorkloadRef, set[str]] = {}
    for ns, pod in sorted(set(pods)):
        ref, action = workload_from_pod(ns, pod)
        owners[(ns, pod)] = PodOwner(ns, pod, ref)
        pods_of.setdefault(ref, set()).add(pod)
        workloads[ref] = WorkloadState(
            ref, uid="", resource_version="", created_at=0.0, action=action, replicas=1
        )
    workloads = {
        ref: dataclasses.replace(
            ws, pods=tuple(sorted(pods_of[ref])), members=_running(pods_of[ref])
        )
        for ref, ws in workloads.items()
    }
    namespaces = {ns: NamespaceState(ns) for ns, _ in owners}
    source = (
        "workload identity from the series alone (pod names; no cluster access): "
        "no workload or namespace labels or annotations, so label selectors and "
        "exclusion annotations are not applied, and workload ages are unknown"
    )
    snapshot = ClusterSnapshot(workloads, namespaces, owners, controller_namespace)
    return Workloads(snapshot, source, guessed=len(owners))


def _running(pods: Iterable[str]) -> tuple[MemberPod, ...]:
    """The replay's pods of a workload: those its alerts name, running all along."""
    return tuple(MemberPod(pod, "", 0.0, "Running") for pod in sorted(pods))


def _unmarked(ws: WorkloadState) -> WorkloadState:
    annotations = {k: v for k, v in ws.annotations.items() if k not in _OURS}
    return dataclasses.replace(ws, annotations=annotations)


def from_cluster(
    reader: KubeReader, pods: Iterable[tuple[str, str]], controller_namespace: str
) -> Workloads:
    snapshot = reader.snapshot(pods, (), controller_namespace)
    owners = dict(snapshot.pod_owners)
    workloads = {ref: _unmarked(ws) for ref, ws in snapshot.workloads.items()}
    namespaces = dict(snapshot.namespaces)
    errors = list(snapshot.errors)
    guessed = 0
    for key, owner in sorted(owners.items()):
        if owner.root is not None:
            continue
        ref, _action = workload_from_pod(*key)
        if ref.kind == "Pod":
            continue
        try:
            workloads.setdefault(ref, _unmarked(reader.workload(ref, (key[1],))))
        except GuardianError as exc:
            logger.info("pod %s/%s is gone and %s cannot be read: %s", *key, ref, exc)
            continue
        owners[key] = PodOwner(*key, ref)
        guessed += 1
        if ref.namespace not in namespaces:
            found = reader.namespace(ref.namespace)
            if found is not None:
                namespaces[ref.namespace] = found
    source = "workloads, namespaces, labels and exclusions read from the cluster now"
    if guessed:
        gone = plural(guessed, "pod no longer exists", "pods no longer exist")
        source += f" ({gone}: their workload found by pod name)"
    for ref, ws in workloads.items():
        names = [pod for (_ns, pod), owner in owners.items() if owner.root == ref]
        workloads[ref] = dataclasses.replace(ws, members=_running(names))
    return Workloads(
        ClusterSnapshot(workloads, namespaces, owners, controller_namespace, tuple(errors)),
        source,
        guessed,
    )
