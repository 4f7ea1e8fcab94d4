"""Policies as Kubernetes objects: watched, validated, in force on the next cycle, with status.

Two informers (list + watch) keep ClusterReclaimPolicy and ReclaimPolicy objects. Each
cycle :meth:`PolicyObjects.policies` validates what changed with the same model as the
files: a valid generation goes into force; an invalid one keeps the last valid
generation of that object (same uid) in force. After the cycle, :meth:`write_status`
(on the leader, through the fenced client) patches each object's ``status`` where it
changed, and records a Warning Event for a generation that is invalid or that delegation
rejects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubernetes import client

from guardian.adapters.kube.events import EventRecorder
from guardian.adapters.kube.informer import Informer
from guardian.adapters.kube.rest import KubeRest, Obj
from guardian.engine.remediation.delegation import opt_in_gap, review
from guardian.engine.remediation.policy_status import Finding, ObjectView, build_status
from guardian.model.policies import CLUSTER_KIND, KIND, ReclaimPolicy
from guardian.model.policies_crd import GROUP, VERSION
from guardian.model.policies_load import policy_from_object
from guardian.model.reclaim import ActionKind, ClusterSnapshot, Plan, WorkloadState
from guardian.model.remediation_events import WorkloadRef
from guardian_common.errors import ConfigErrors, GuardianError

logger = logging.getLogger(__name__)

API_VERSION = f"{GROUP}/{VERSION}"
PLURALS = {CLUSTER_KIND: "clusterreclaimpolicies", KIND: "reclaimpolicies"}


@dataclass
class Tracked:
    """One object: its latest generation, and the last valid one (what acts)."""

    kind: str
    namespace: str
    name: str
    uid: str
    generation: int = 0
    obj: Obj = field(default_factory=dict)
    policy: ReclaimPolicy | None = None
    in_force: int | None = None
    invalid: list[Finding] = field(default_factory=list)
    warned: int = 0  # the generation whose Event was recorded

    @property
    def path(self) -> str:
        ns = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"/apis/{API_VERSION}{ns}/{PLURALS[self.kind]}/{self.name}"

    @property
    def identity(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _findings(exc: ConfigErrors) -> list[Finding]:
    return [(e.field or "", e.reason) for e in exc.errors]


class PolicyObjects:
    def __init__(self, informers: Sequence[Informer], instance: str = "gpu-guardian") -> None:
        self.informers = list(informers)
        self.instance = instance
        self.tracked: dict[tuple[str, str, str], Tracked] = {}
        self._files: list[ReclaimPolicy] = []
        self._seen = -1

    @classmethod
    def watching(cls, api_client: Any, timeout: float, instance: str) -> PolicyObjects:
        api = client.CustomObjectsApi(api_client)
        informers = [
            Informer(
                kind,
                partial(api.list_cluster_custom_object, GROUP, VERSION, plural),
                request_timeout=timeout,
            )
            for kind, plural in PLURALS.items()
        ]
        return cls(informers, instance)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    # ---------------------------------------------------------------- reading
    def refresh(self) -> None:
        """Validate what changed since the last call (new objects, new generations)."""
        caches = [i.snapshot() for i in self.informers]
        present: set[tuple[str, str, str]] = set()
        for cache in caches:
            for obj in cache.objects.values():
                key = self._update(obj)
                if key is not None:
                    present.add(key)
        if all(c.synced for c in caches):
            for gone in set(self.tracked) - present:
                logger.info("policy %s deleted: no longer in force", self.tracked[gone].identity)
                del self.tracked[gone]

    def _update(self, obj: Obj) -> tuple[str, str, str] | None:
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind") or "")
        if kind not in PLURALS:
            return None
        key = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        uid = str(meta.get("uid") or "")
        generation = int(meta.get("generation") or 0)
        found = self.tracked.get(key)
        if found is None or found.uid != uid:  # new, or deleted and created again
            found = self.tracked[key] = Tracked(*key, uid)
        found.obj = obj
        if found.generation == generation:
            return key
        found.generation = generation
        try:
            found.policy = policy_from_object(obj)
        except ConfigErrors as exc:
            found.invalid = _findings(exc)
            logger.warning(
                "%s %s generation %s is invalid: %s", kind, found.identity, generation, exc
            )
            return key
        found.in_force, found.invalid = generation, []
        logger.info("%s %s generation %s in force", kind, found.identity, generation)
        return key

    def set_files(self, policies: Sequence[ReclaimPolicy]) -> None:
        self._files = list(policies)

    def policies(self) -> list[ReclaimPolicy]:
        """The files' policies and every object's generation in force. An object named
        like a file's policy is left out (the file wins; its status says so)."""
        self.refresh()
        names = {p.name for p in self._files}
        objects = [t.policy for t in self.tracked.values() if t.policy is not None]
        return self._files + [p for p in objects if p.name not in names]

    # ---------------------------------------------------------------- status
    def view(self, tracked: Tracked, policies: Sequence[ReclaimPolicy]) -> ObjectView:
        """What the status says; a team's policy is judged with what it inherits."""
        rejected: list[Finding] = []
        note = ""
        if tracked.policy is not None and tracked.policy.name in {p.name for p in self._files}:
            rejected.append(("metadata.name", "a policy file defines the same name; it wins"))
        elif tracked.policy is not None and tracked.kind == KIND:
            parents = [p for p in policies if p.namespace is None]
            rejected = review(tracked.policy, parents)
        elif tracked.policy is not None:
            note = opt_in_gap(tracked.policy, policies) or ""
        return ObjectView(
            tracked.identity,
            tracked.generation,
            tracked.in_force,
            tracked.invalid,
            rejected,
            note,
        )

    def write_status(
        self,
        rest: KubeRest,
        plan: Plan | None,
        snapshot: ClusterSnapshot | None,
        now: float,
    ) -> None:
        """Patch each object's status where it changed (``rest`` is the fenced writer)."""
        policies = self.policies()
        events = EventRecorder(rest, self.instance)
        for tracked in list(self.tracked.values()):
            view = self.view(tracked, policies)
            previous = tracked.obj.get("status") or {}
            status = build_status(view, plan, snapshot, previous)
            try:
                self._warn(events, tracked, view, now)
                if status != previous:
                    self._patch(rest, tracked, status)
            except GuardianError as exc:  # per object: the others still get theirs
                logger.warning("status of %s not written: %s", tracked.identity, exc)

    def _patch(self, rest: KubeRest, tracked: Tracked, status: dict[str, Any]) -> None:
        current = rest.get(tracked.path)  # the object now: a newer generation waits a cycle
        if int((current.get("metadata") or {}).get("generation") or 0) != tracked.generation:
            return
        tracked.obj = rest.merge_patch(tracked.path + "/status", {"status": status})

    def _warn(self, events: EventRecorder, tracked: Tracked, view: ObjectView, now: float) -> None:
        findings = list(view.invalid or view.rejected)
        if not findings or tracked.warned == tracked.generation:
            return
        meta = tracked.obj.get("metadata") or {}
        stand_in = WorkloadState(
            ref=WorkloadRef(
                API_VERSION, tracked.kind, tracked.namespace or "default", tracked.name
            ),
            uid=tracked.uid,
            resource_version=str(meta.get("resourceVersion") or ""),
            created_at=0.0,
            action=ActionKind.NONE,
        )
        reason = "PolicyInvalid" if view.invalid else "PolicyRejected"
        text = "; ".join(f"{f}: {why}" if f else why for f, why in findings)
        events.record(
            stand_in,
            reason,
            f"generation {tracked.generation}: {text}",
            episode=f"generation-{tracked.generation}",
            now=now,
            warning=True,
        )
        tracked.warned = tracked.generation
