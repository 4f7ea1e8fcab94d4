"""Pending pods that ask for GPUs: the demand ``reclaim.when: demand`` waits for.

An informer on pods with ``status.phase=Pending`` (list + watch, cluster-wide); a pod
counts while it has no node, is not being deleted and requests an extended resource
(engine/remediation/demand.py says when it could use an idle workload's GPUs). What the
scheduler's filters compare is kept with it: its node selector, required node affinity,
tolerations and every resource it requests (engine/remediation/pod_facts.py).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from guardian.adapters.kube.informer import Informer, Obj
from guardian.engine.remediation.demand import extended_requests
from guardian.engine.remediation.pod_facts import (
    node_selector,
    pod_requests,
    required_affinity,
    tolerations,
)
from guardian.model.reclaim import PendingPod
from guardian.model.times import parse_rfc3339


def pending_pod(obj: Obj) -> PendingPod | None:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if (obj.get("status") or {}).get("phase") != "Pending":
        return None
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return None
    requests = extended_requests(obj)
    if not requests:
        return None
    since = parse_rfc3339(meta.get("creationTimestamp"))
    if since is None:
        return None
    return PendingPod(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        requests,
        since,
        node=str(spec.get("nodeName") or ""),
        node_selector=node_selector(obj),
        affinity=required_affinity(obj),
        tolerations=tolerations(obj),
        resources=pod_requests(obj),
    )


class PendingPods:
    def __init__(self, informer: Informer) -> None:
        self.informer = informer

    @classmethod
    def watching(cls, api_client: Any, timeout: float) -> PendingPods:
        core = client.CoreV1Api(api_client)
        informer = Informer(
            "pending-pods",
            core.list_pod_for_all_namespaces,
            request_timeout=timeout,
            field_selector="status.phase=Pending",
        )
        return cls(informer)

    def current(self) -> tuple[PendingPod, ...] | None:
        """The pods waiting now; None until the first list succeeded."""
        cache = self.informer.snapshot()
        if not cache.synced:
            return None
        found = (pending_pod(obj) for obj in cache.objects.values())
        return tuple(
            sorted((p for p in found if p is not None), key=lambda p: (p.namespace, p.name))
        )

    def start(self) -> None:
        self.informer.start()

    def stop(self) -> None:
        self.informer.stop()
