"""Demand-aware reclaim: is someone waiting for the GPUs an idle workload holds?

A Pending pod *could use* an idle workload's GPUs when, for some extended resource R
(``nvidia.com/gpu``, ``amd.com/gpu``, a MIG profile, ...):

1. the workload's pods request R, and
2. the pending pod requests R, at most as many as the workload's pods request on one
   node together (what reclaiming it frees on that node), and
3. it is not one of the workload's own pods, has no node yet, and has been Pending for
   at least ``reclaim.pendingFor`` (since its creationTimestamp).

Other resources (CPU, memory), node selectors, affinity and taints are not compared:
the scheduler decides those, and a pod that still does not fit stays Pending, so the
next idle workload's reclaim is not held by it. The pods are read from the API by an
informer on Pending pods (app/remediation/pending_pods.py), never from a metric.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardian.model.reclaim import PendingPod, PodOwner, WorkloadState
from guardian.model.times import rfc3339


@dataclass(frozen=True)
class Demand:
    waiting: tuple[PendingPod, ...]  # who could use the GPUs, longest waiting first
    holds: Mapping[str, int]  # R -> the most the workload holds on one node

    def who(self, limit: int = 3) -> str:
        shown = [
            f"{p.namespace}/{p.name} (Pending since {rfc3339(p.since)}, asks "
            + ", ".join(f"{n} {r}" for r, n in sorted(p.requests.items()))
            + ")"
            for p in self.waiting[:limit]
        ]
        more = len(self.waiting) - limit
        return "; ".join(shown) + (f" and {more} more" if more > 0 else "")

    def holding(self) -> str:
        return ", ".join(f"{n} {r}" for r, n in sorted(self.holds.items())) or "no GPUs"


def held_per_node(ws: WorkloadState, owners: Mapping[tuple[str, str], PodOwner]) -> dict[str, int]:
    """R -> the most of R the workload's pods request together on one node."""
    per_node: defaultdict[tuple[str, str], int] = defaultdict(int)
    for pod in ws.pods:
        owner = owners.get((ws.ref.namespace, pod))
        if owner is None or owner.root != ws.ref:
            continue
        for resource, count in owner.requests.items():
            if count > 0:
                per_node[(owner.node or "", resource)] += count
    most: dict[str, int] = {}
    for (_node, resource), count in per_node.items():
        most[resource] = max(most.get(resource, 0), count)
    return most


def could_use(pod: PendingPod, holds: Mapping[str, int]) -> bool:
    return any(0 < pod.requests.get(r, 0) <= n for r, n in holds.items())


def demand(
    ws: WorkloadState,
    owners: Mapping[tuple[str, str], PodOwner],
    pending: Iterable[PendingPod],
    pending_for: float,
    now: float,
) -> Demand:
    holds = held_per_node(ws, owners)
    own = set(ws.pods)
    waiting: Sequence[PendingPod] = sorted(
        (
            p
            for p in pending
            if not (p.namespace == ws.ref.namespace and p.name in own)
            and now - p.since >= pending_for
            and could_use(p, holds)
        ),
        key=lambda p: (p.since, p.namespace, p.name),
    )
    return Demand(tuple(waiting), holds)


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
