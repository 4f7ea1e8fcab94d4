"""Owner resolution rules: which owner reference to follow, and how a root is stopped.

Pod → ReplicaSet → Deployment, Pod → StatefulSet (→ Notebook, LeaderWorkerSet, ...),
Pod → Job → CronJob. The walk follows the controller reference up to the root, so a
child whose owner reconciles its replicas (a ReplicaSet under a Deployment, a
StatefulSet under a Notebook) is never the one we touch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardian.model.reclaim import ActionKind
from guardian.model.remediation_events import WorkloadRef

MAX_DEPTH = 6  # ownership chains are short; a longer one is a loop or a bug

_BUILTIN_SCALE = {("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet")}
_SUSPEND = {("batch/v1", "Job"), ("batch/v1", "CronJob")}
NOTEBOOK = ("kubeflow.org/v1", "Notebook")


def controller_owner(obj: Mapping[str, Any]) -> WorkloadRef | None:
    """The owner that controls ``obj`` (``controller: true``; else a single owner), or None."""
    meta = obj.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    chosen = [o for o in owners if o.get("controller")] or (owners if len(owners) == 1 else [])
    if not chosen:
        return None
    owner = chosen[0]
    return WorkloadRef(
        str(owner.get("apiVersion", "")),
        str(owner.get("kind", "")),
        str(meta.get("namespace", "")),
        str(owner.get("name", "")),
    )


def action_for(ref: WorkloadRef, *, has_scale: bool) -> ActionKind:
    """How the root ``ref`` is reclaimed."""
    key = (ref.api_version, ref.kind)
    if key == ("v1", "Pod"):
        return ActionKind.POD
    if key == NOTEBOOK:
        return ActionKind.NOTEBOOK
    if key in _BUILTIN_SCALE:
        return ActionKind.SCALE
    if key in _SUSPEND:
        return ActionKind.SUSPEND
    if has_scale:
        return ActionKind.SCALE_SUBRESOURCE
    return ActionKind.NONE
