"""Kubernetes Events on the workload: a signal in the cluster for every step we take.

One Event per (workload, reason), deduplicated as kube-downscaler does: a repeat bumps
``count`` and ``lastTimestamp``. The same step of the same episode is never counted
twice (a restart after a crash re-sends it), so the episode is kept on the Event.
Events expire (about an hour); the ledger is the record.
"""

from __future__ import annotations

import hashlib
import logging

from guardian.adapters.kube.rest import Conflict, KubeRest, NotFound
from guardian.model.policies import Annotations
from guardian.model.reclaim import WorkloadState
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

COMPONENT = "gpu-guardian"


def event_name(ws: WorkloadState, reason: str) -> str:
    digest = hashlib.sha256(f"{ws.uid}/{ws.ref}/{reason}".encode()).hexdigest()[:10]
    return f"{ws.ref.name[:200]}.gpu-guardian.{digest}"


class EventRecorder:
    def __init__(self, rest: KubeRest, instance: str) -> None:
        self.rest = rest
        self.instance = instance

    def record(
        self,
        ws: WorkloadState,
        reason: str,
        message: str,
        *,
        episode: str,
        now: float,
        warning: bool = False,
    ) -> None:
        """Create or bump the Event. A failure is logged, never raised: it is only a signal."""
        try:
            self._record(ws, reason, message, episode, now, warning)
        except GuardianError as exc:
            logger.warning("event %s on %s not recorded: %s", reason, ws.ref, exc)

    def recorded(self, ws: WorkloadState, reason: str, episode: str) -> bool:
        """Whether the Event of ``reason`` for ``episode`` is there: a step that writes
        nothing else on the cluster (notify) is visible as applied through it."""
        path = f"/api/v1/namespaces/{ws.ref.namespace}/events/{event_name(ws, reason)}"
        try:
            existing = self.rest.get(path)
        except NotFound:
            return False
        annotations = (existing.get("metadata") or {}).get("annotations") or {}
        return bool(annotations.get(Annotations.EPISODE) == f"{episode}/{reason}")

    def _record(
        self, ws: WorkloadState, reason: str, message: str, episode: str, now: float, warning: bool
    ) -> None:
        ns = ws.ref.namespace
        name = event_name(ws, reason)
        path = f"/api/v1/namespaces/{ns}/events"
        marker = f"{episode}/{reason}"
        try:
            existing = self.rest.get(f"{path}/{name}")
        except NotFound:
            existing = None
        if existing is not None:
            annotations = (existing.get("metadata") or {}).get("annotations") or {}
            if annotations.get(Annotations.EPISODE) == marker:
                logger.info("event %s on %s already recorded for this episode", reason, ws.ref)
                return
            count = int(existing.get("count") or 1) + 1
            patch = {
                "metadata": {
                    "resourceVersion": existing["metadata"]["resourceVersion"],
                    "annotations": {Annotations.EPISODE: marker},
                },
                "count": count,
                "lastTimestamp": rfc3339(now),
                "message": message,
            }
            self.rest.merge_patch(f"{path}/{name}", patch)
            logger.info("event %s on %s bumped to count %s", reason, ws.ref, count)
            return
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": name,
                "namespace": ns,
                "annotations": {Annotations.EPISODE: marker},
            },
            "involvedObject": {
                "apiVersion": ws.ref.api_version,
                "kind": ws.ref.kind,
                "name": ws.ref.name,
                "namespace": ns,
                "uid": ws.uid,
                "resourceVersion": ws.resource_version,
            },
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
        }
        try:
            self.rest.create(path, event)
        except Conflict:
            logger.info("event %s on %s created concurrently", reason, ws.ref)
