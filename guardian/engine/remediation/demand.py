"""Demand-aware reclaim: is a pod waiting that could run on the GPUs an idle workload holds?

A Pending pod is demand for an idle workload when it could be scheduled on one of the
nodes the workload's pods run on (``node``) once those pods are gone:

1. it is not one of the workload's own pods, and has been Pending for at least
   ``reclaim.pendingFor`` (since its creationTimestamp);
2. for some extended resource R (``nvidia.com/gpu``, ``amd.com/gpu``, a MIG profile, a
   time-sliced ``nvidia.com/gpu.shared``: the name must match), the workload's pods on
   ``node`` request R and the pod requests R, at most as many as they free there;
3. it passes, on ``node``, the scheduler's NodeName, TaintToleration, NodeAffinity and
   NodeResourcesFit filters (engine/remediation/scheduling.py): ``spec.nodeName``,
   ``nodeSelector``, required node affinity, taints with effect NoSchedule/NoExecute
   against its tolerations, and every resource it requests (cpu, memory, GPUs, other
   extended resources, one more pod) against the node's allocatable minus what the
   node's other non-terminal pods request.

Only positive evidence counts: a node that could not be read (or is not in the
snapshot) fits nothing, and a reclaim held for demand then waits, saying so.

Not compared (a pod excluded only by these still counts): preferred node affinity,
inter-pod affinity and anti-affinity, topology spread constraints, volumes and their
zones, host ports, priorities and preemption, scheduling gates, pod-level resources,
and whether the node is ready. The pods are read from the API by an informer on Pending
pods (app/remediation/pending_pods.py), the nodes by the reader while pods wait.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardian.engine.remediation.scheduling import fits
from guardian.model.reclaim import ClusterSnapshot, PendingPod, PodOwner, WorkloadState
from guardian.model.times import rfc3339
from guardian_common.words import plural

Key = tuple[str, str]  # (namespace, name)
UNKNOWN_NODE = "(node unknown)"  # a pod of the workload whose node was not read


def _asks(pod: PendingPod) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(pod.requests.items()))


def _name(pod: PendingPod) -> str:
    return f"{pod.namespace}/{pod.name}"


@dataclass(frozen=True)
class Verdict:
    """One pending pod that asks for what the workload holds, judged on its nodes."""

    pod: PendingPod
    node: str | None  # the first node it fits once the workload is gone; None: none
    why: Mapping[str, str] = field(default_factory=dict)  # node -> why it does not fit
    unread: tuple[str, ...] = ()  # nodes it might fit but that could not be read

    def why_not(self) -> str:
        if len(self.why) == 1:
            return next(iter(self.why.values()))
        return "; ".join(f"{node}: {why}" for node, why in sorted(self.why.items()))


@dataclass(frozen=True)
class Demand:
    waiting: tuple[PendingPod, ...]  # who could run on the freed GPUs, longest waiting first
    holds: Mapping[str, int]  # R -> the most the workload holds on one node
    placed: Mapping[Key, str] = field(default_factory=dict)  # waiting pod -> its node
    misfits: tuple[Verdict, ...] = ()  # ask for what it holds, fit no node read
    unread: Mapping[str, str] = field(default_factory=dict)  # node -> why it is unknown

    def who(self, limit: int = 3) -> str:
        shown = [
            f"{_name(p)} (Pending since {rfc3339(p.since)}, asks {_asks(p)}) could run on "
            f"node {self.placed.get((p.namespace, p.name), '?')}"
            for p in self.waiting[:limit]
        ]
        more = len(self.waiting) - limit
        tail = f" and {more} more" if more > 0 else ""
        return "; ".join(shown) + " once these GPUs are freed" + tail

    def holding(self) -> str:
        return ", ".join(f"{n} {r}" for r, n in sorted(self.holds.items())) or "no GPUs"

    def nodes(self) -> str:
        names = sorted({n for v in self.misfits for n in v.why})
        return ("node " if len(names) == 1 else "nodes ") + ", ".join(names)

    def resources(self) -> str:
        return ", ".join(
            sorted({r for v in self.misfits for r in v.pod.requests if r in self.holds})
        )

    def none_fits(self, limit: int = 3) -> str:
        """E.g. "2 pods wait for nvidia.com/gpu but none fits node n1: queue/a (why), ..."."""
        count = len(self.misfits)
        pods = plural(count, "pod waits", "pods wait")
        listed = ", ".join(f"{_name(v.pod)} ({v.why_not()})" for v in self.misfits[:limit])
        more = f" and {count - limit} more" if count > limit else ""
        verb = "it does not fit" if count == 1 else "none fits"
        return f"{pods} for {self.resources()} but {verb} {self.nodes()}: {listed}{more}"

    def unknown(self) -> str:
        """Pods that may fit a node that could not be read, and why it could not."""
        nodes = sorted({n for v in self.misfits for n in v.unread})
        said = [
            "the node of some of its pods is not known"
            if n == UNKNOWN_NODE
            else f"node {n} could not be read ({self.unread[n]})"
            if self.unread.get(n)
            else f"node {n} was not read"
            for n in nodes
        ]
        pods = [_name(v.pod) for v in self.misfits if v.unread]
        more = f" and {len(pods) - 3} more" if len(pods) > 3 else ""
        return f"{'; '.join(said)}: cannot tell whether {', '.join(pods[:3])}{more} could run there"


def freed_per_node(ws: WorkloadState, owners: Mapping[Key, PodOwner]) -> dict[str, dict[str, int]]:
    """node -> R -> what the workload's pods there request together: what a reclaim frees."""
    freed: defaultdict[str, dict[str, int]] = defaultdict(dict)
    for pod in ws.pods:
        owner = owners.get((ws.ref.namespace, pod))
        if owner is None or owner.root != ws.ref:
            continue
        on = freed[owner.node or ""]
        for resource, count in owner.requests.items():
            if count > 0:
                on[resource] = on.get(resource, 0) + count
    return {node: held for node, held in freed.items() if held}


def held_per_node(ws: WorkloadState, owners: Mapping[Key, PodOwner]) -> dict[str, int]:
    """R -> the most of R the workload's pods request together on one node."""
    most: dict[str, int] = {}
    for held in freed_per_node(ws, owners).values():
        for resource, count in held.items():
            most[resource] = max(most.get(resource, 0), count)
    return most


def could_use(pod: PendingPod, holds: Mapping[str, int]) -> bool:
    return any(0 < pod.requests.get(r, 0) <= n for r, n in holds.items())


def gone_from(ws: WorkloadState, owners: Mapping[Key, PodOwner], node: str) -> frozenset[Key]:
    """The workload's pods on ``node``: they leave it when the workload is reclaimed."""
    ns = ws.ref.namespace
    mine = {
        (ns, pod)
        for pod in ws.pods
        if (o := owners.get((ns, pod))) is not None and o.root == ws.ref and o.node == node
    }
    mine |= {(ns, m.name) for m in ws.members or () if m.node == node}
    return frozenset(mine)


def _frees(node: str, held: Mapping[str, int]) -> str:
    return f"{node} frees " + ", ".join(f"{n} {r}" for r, n in sorted(held.items()))


def judge(
    pod: PendingPod,
    ws: WorkloadState,
    snapshot: ClusterSnapshot,
    freed: Mapping[str, Mapping[str, int]],
) -> Verdict:
    """Where ``pod`` could run once the workload's pods are gone, or why nowhere."""
    why: dict[str, str] = {}
    unread: list[str] = []
    for node, held in sorted(freed.items()):
        name = node or UNKNOWN_NODE
        if not could_use(pod, held):
            why[name] = f"asks {_asks(pod)}, {_frees(name, held)}"
            continue
        state = snapshot.nodes.get(node) if node else None
        if state is None:
            unread.append(name)
            why[name] = "node not read"
            continue
        reason = fits(pod, state, gone_from(ws, snapshot.pod_owners, node))
        if reason is None:
            return Verdict(pod, node)
        why[name] = reason
    return Verdict(pod, None, why, tuple(unread))


def demand(ws: WorkloadState, snapshot: ClusterSnapshot, pending_for: float, now: float) -> Demand:
    freed = freed_per_node(ws, snapshot.pod_owners)
    holds = held_per_node(ws, snapshot.pod_owners)
    own = set(ws.pods) | {m.name for m in ws.members or ()}
    asking = sorted(
        (
            p
            for p in snapshot.pending_pods or ()
            if not (p.namespace == ws.ref.namespace and p.name in own)
            and now - p.since >= pending_for
            and any(p.requests.get(r, 0) > 0 for r in holds)
        ),
        key=lambda p: (p.since, p.namespace, p.name),
    )
    verdicts = [judge(p, ws, snapshot, freed) for p in asking]
    placed = {(v.pod.namespace, v.pod.name): v.node for v in verdicts if v.node is not None}
    unread = {n: snapshot.node_errors.get(n, "") for v in verdicts for n in v.unread}
    return Demand(
        waiting=tuple(v.pod for v in verdicts if v.node is not None),
        holds=holds,
        placed=placed,
        misfits=tuple(v for v in verdicts if v.node is None),
        unread=unread,
    )


def _is_extended(name: str) -> bool:
    """A device plugin's resource: ``domain/name`` outside kubernetes.io."""
    domain, slash, _ = name.partition("/")
    return bool(slash) and not domain.endswith("kubernetes.io")


def extended_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Extended resources a pod object's containers request (a limit alone counts: for
    extended resources the request defaults to it). Init containers are not counted."""
    total: defaultdict[str, int] = defaultdict(int)
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, quantity in asked.items():
            text = str(quantity).strip()
            if _is_extended(name) and text.isdigit() and int(text) > 0:
                total[name] += int(text)
    return dict(total)
