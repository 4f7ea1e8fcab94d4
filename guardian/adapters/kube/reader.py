"""Read what the planner needs: pods → root owners, the roots, their namespaces and HPAs."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from guardian.adapters.kube.rest import KubeRest, NotFound, Obj, object_path
from guardian.engine.owners import MAX_DEPTH, action_for, controller_owner
from guardian.engine.remediation.demand import extended_requests
from guardian.engine.remediation.evidence import gpu_resources
from guardian.engine.remediation.pod_facts import node_state
from guardian.model.policies import NOTEBOOK_STOPPED, Annotations
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    HpaState,
    MemberPod,
    NamespaceState,
    NodeState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import WorkloadRef
from guardian.model.times import parse_rfc3339
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resource:
    plural: str
    namespaced: bool
    has_scale: bool


@dataclass
class _Walk:
    pods: dict[WorkloadRef, set[str]] = field(default_factory=dict)
    jobs: dict[WorkloadRef, set[str]] = field(default_factory=dict)


@dataclass
class PodIndex:
    """What the roots of one snapshot share: one pod list per namespace, and each owner's
    own owner, read once (a namespace's ReplicaSets, Jobs, StatefulSets)."""

    pods: dict[str, list[Obj]] = field(default_factory=dict)
    above: dict[WorkloadRef, WorkloadRef | None] = field(default_factory=dict)


class KubeReader:
    def __init__(self, rest: KubeRest) -> None:
        self.rest = rest
        self._discovery: dict[str, dict[str, Resource]] = {}

    # ---------------------------------------------------------------- discovery
    def resource(self, api_version: str, kind: str) -> Resource:
        """The plural and /scale support of ``kind``, from API discovery (cached)."""
        kinds = self._discovery.get(api_version)
        if kinds is None:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            listing = self.rest.get(path)
            names = {r["name"] for r in listing.get("resources", [])}
            kinds = {
                r["kind"]: Resource(
                    r["name"], bool(r.get("namespaced")), f"{r['name']}/scale" in names
                )
                for r in listing.get("resources", [])
                if "/" not in r["name"]
            }
            self._discovery[api_version] = kinds
        try:
            return kinds[kind]
        except KeyError:
            raise NotFound(f"kind {kind} is not served by {api_version}") from None

    def find_kind(self, text: str) -> tuple[str, str]:
        """(apiVersion, Kind) for a kind as users type it: ``Deployment``, ``deploy``,
        ``notebooks``, ``LeaderWorkerSet``; optionally ``kind.group``."""
        wanted, _, group = text.lower().partition(".")
        versions = ["v1"] if not group or group == "core" else []
        listing = self.rest.get("/apis")
        versions += [
            entry["preferredVersion"]["groupVersion"]
            for entry in listing.get("groups", [])
            if not group or entry.get("name") == group
        ]
        for api_version in versions:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            for res in self.rest.get(path).get("resources", []):
                names = {
                    res["name"],
                    res.get("singularName", ""),
                    res["kind"].lower(),
                    *res.get("shortNames", []),
                }
                if "/" not in res["name"] and wanted in names:
                    return api_version, str(res["kind"])
        raise NotFound(f"no served kind matches {text!r}")

    def path(self, ref: WorkloadRef) -> str:
        res = self.resource(ref.api_version, ref.kind)
        return object_path(
            ref.api_version, res.plural, ref.namespace if res.namespaced else None, ref.name
        )

    def get(self, ref: WorkloadRef) -> Obj:
        return self.rest.get(self.path(ref))

    # ---------------------------------------------------------------- owners
    def resolve_pod(self, namespace: str, pod: str, walk: _Walk | None = None) -> PodOwner:
        ref = WorkloadRef("v1", "Pod", namespace, pod)
        job: str | None = None
        try:
            obj = self.get(ref)
            # Which pod this is: the planner checks them against the alert's node/pod_uid.
            node = str((obj.get("spec") or {}).get("nodeName") or "")
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            requests = extended_requests(obj)  # what reclaiming it frees (demand)
            for _ in range(MAX_DEPTH):
                owner = controller_owner(obj)
                if owner is None:
                    break
                if ref.kind == "Job":
                    job = ref.name
                ref = owner
                obj = self.get(ref)
            else:
                return PodOwner(namespace, pod, None, "ownership chain too deep", node, uid)
        except NotFound as exc:
            return PodOwner(namespace, pod, None, f"not found: {exc}")
        except GuardianError as exc:
            return PodOwner(namespace, pod, None, f"cannot read its owners: {exc}")
        if walk is not None:
            walk.pods.setdefault(ref, set()).add(pod)
            if job is not None and ref.kind == "CronJob":
                walk.jobs.setdefault(ref, set()).add(job)
        return PodOwner(namespace, pod, ref, node=node, uid=uid, requests=requests)

    # ---------------------------------------------------------------- workloads
    def workload(
        self,
        ref: WorkloadRef,
        pods: Iterable[str] = (),
        jobs: Iterable[str] = (),
    ) -> WorkloadState:
        """The root as it is now, without its members (``with_members`` reads them: only
        a decision to act needs them, not a restore, a button or a status)."""
        obj = self.get(ref)
        res = self.resource(ref.api_version, ref.kind)
        action = action_for(ref, has_scale=res.has_scale)
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        annotations = dict(meta.get("annotations") or {})
        replicas: int | None = None
        suspended = False
        rv = str(meta.get("resourceVersion", ""))
        if action is ActionKind.SCALE:
            replicas = int(spec.get("replicas", 1))
        elif action is ActionKind.SCALE_SUBRESOURCE:
            scale = self.rest.get(self.path(ref) + "/scale")
            replicas = int((scale.get("spec") or {}).get("replicas", 0))
        elif action is ActionKind.SUSPEND:
            suspended = bool(spec.get("suspend", False))
        elif action is ActionKind.NOTEBOOK:
            suspended = NOTEBOOK_STOPPED in annotations
        hpa = (
            self.hpa_for(ref)
            if action in (ActionKind.SCALE, ActionKind.SCALE_SUBRESOURCE)
            else None
        )
        return WorkloadState(
            ref=ref,
            uid=str(meta.get("uid", "")),
            resource_version=rv,
            created_at=parse_rfc3339(meta.get("creationTimestamp")) or 0.0,
            action=action,
            labels=dict(meta.get("labels") or {}),
            annotations=annotations,
            replicas=replicas,
            suspended=suspended,
            plural=res.plural,
            hpa=hpa,
            pods=tuple(sorted(pods)),
            jobs=tuple(sorted(jobs)),
        )

    # ---------------------------------------------------------------- members
    def with_members(self, ws: WorkloadState, index: PodIndex | None = None) -> WorkloadState:
        """``ws`` with every pod it owns now; ``index`` shares the pod reads between the
        workloads of one snapshot."""
        return dataclasses.replace(ws, members=self.members(ws.ref, index or PodIndex()))

    def members(self, ref: WorkloadRef, index: PodIndex) -> tuple[MemberPod, ...] | None:
        """Every pod holding GPUs that ``ref`` owns now, through its ReplicaSets, Jobs or
        StatefulSet: the whole the evidence must cover. None if they cannot be read.
        Ownership is read from owner references, not from the root's label selector."""
        try:
            if ref.api_version == "v1" and ref.kind == "Pod":
                pods = [self.get(ref)]
            else:
                pods = index.pods.get(ref.namespace) or []
                if ref.namespace not in index.pods:
                    listing = self.rest.get(object_path("v1", "pods", ref.namespace))
                    pods = [p for p in listing.get("items") or [] if isinstance(p, dict)]
                    index.pods[ref.namespace] = pods
            return tuple(
                _member(pod)
                for pod in pods
                if gpu_resources(extended_requests(pod)) and self._root_of(pod, index.above) == ref
            )
        except GuardianError as exc:
            logger.warning("cannot read the pods of %s: %s", ref, exc)
            return None

    def _root_of(
        self, pod: Obj, above: dict[WorkloadRef, WorkloadRef | None]
    ) -> WorkloadRef | None:
        """The root owner of ``pod``; ``above`` caches each owner's own owner."""
        meta = pod.get("metadata") or {}
        ref = controller_owner(pod)
        if ref is None:
            return WorkloadRef("v1", "Pod", str(meta.get("namespace", "")), meta.get("name", ""))
        for _ in range(MAX_DEPTH):
            if ref not in above:
                try:
                    above[ref] = controller_owner(self.get(ref))
                except NotFound:
                    above[ref] = None  # a dangling owner: the chain ends at it
            nxt = above[ref]
            if nxt is None:
                return ref
            ref = nxt
        return None

    def hpa_for(self, ref: WorkloadRef) -> HpaState | None:
        try:
            listing = self.rest.get(
                object_path("autoscaling/v2", "horizontalpodautoscalers", ref.namespace)
            )
        except NotFound:
            return None  # the cluster serves no autoscaling/v2
        for item in listing.get("items", []):
            spec: dict[str, Any] = item.get("spec") or {}
            target = spec.get("scaleTargetRef") or {}
            if target.get("kind") == ref.kind and target.get("name") == ref.name:
                return HpaState(
                    str(item["metadata"]["name"]), spec.get("minReplicas"), spec.get("maxReplicas")
                )
        return None

    def namespace(self, name: str) -> NamespaceState | None:
        try:
            obj = self.rest.get(f"/api/v1/namespaces/{name}")
        except NotFound:
            return None
        meta = obj.get("metadata") or {}
        return NamespaceState(
            name, dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
        )

    def namespace_uid(self, name: str) -> str | None:
        """The Namespace's ``metadata.uid`` (kube-system's identifies the cluster)."""
        try:
            obj = self.rest.get(f"/api/v1/namespaces/{name}")
        except NotFound:
            return None
        return str((obj.get("metadata") or {}).get("uid") or "") or None

    # ---------------------------------------------------------------- snapshot
    def snapshot(
        self,
        pods: Iterable[tuple[str, str]],
        extra: Iterable[WorkloadRef],
        controller_namespace: str,
    ) -> ClusterSnapshot:
        """Everything the planner needs for the alerts' pods and the ``extra`` workloads
        (reclaimed ones, open episodes). A read failure is kept per item."""
        walk = _Walk()
        owners = {(ns, pod): self.resolve_pod(ns, pod, walk) for ns, pod in sorted(set(pods))}
        refs = set(walk.pods) | set(extra)
        workloads: dict[WorkloadRef, WorkloadState] = {}
        errors: list[str] = []
        index = PodIndex()
        for ref in sorted(refs, key=str):
            try:
                seen, jobs = walk.pods.get(ref, ()), walk.jobs.get(ref, ())
                workloads[ref] = self.with_members(self.workload(ref, seen, jobs), index)
            except NotFound:
                continue
            except GuardianError as exc:
                errors.append(f"{ref}: {exc}")
        namespaces: dict[str, NamespaceState] = {}
        for name in sorted({r.namespace for r in refs} | {controller_namespace}):
            try:
                found = self.namespace(name)
            except GuardianError as exc:
                errors.append(f"namespace {name}: {exc}")
                continue
            if found is not None:
                namespaces[name] = found
        for message in errors:
            logger.warning("cluster read failed: %s", message)
        return ClusterSnapshot(workloads, namespaces, owners, controller_namespace, tuple(errors))

    # ---------------------------------------------------------------- nodes
    def node(self, name: str) -> NodeState:
        """A node and the non-terminal pods bound to it, from every namespace: what the
        scheduler's filters compare a waiting pod against (engine/remediation/scheduling.py)."""
        obj = self.rest.get(object_path("v1", "nodes", None, name))
        bound = f"spec.nodeName={name},status.phase!=Succeeded,status.phase!=Failed"
        listing = self.rest.get(object_path("v1", "pods", None), [("fieldSelector", bound)])
        pods = [p for p in listing.get("items") or [] if isinstance(p, dict)]
        return node_state(obj, pods)

    def with_nodes(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """``snapshot`` with the nodes its workloads' pods run on, read only while pods
        that ask for GPUs wait (demand is judged on them). A node that cannot be read is
        left out, with why: the planner then counts no pod as fitting it."""
        if not snapshot.pending_pods:
            return snapshot
        names = {
            o.node
            for o in snapshot.pod_owners.values()
            if o.node and o.root is not None and o.root in snapshot.workloads
        }
        nodes: dict[str, NodeState] = {}
        errors: dict[str, str] = {}
        for name in sorted(names):
            try:
                nodes[name] = self.node(name)
            except GuardianError as exc:
                errors[name] = str(exc)
                logger.warning("cannot read node %s: %s", name, exc)
        return replace(snapshot, nodes=nodes, node_errors=errors)


def _member(pod: Obj) -> MemberPod:
    meta = pod.get("metadata") or {}
    return MemberPod(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        created_at=parse_rfc3339(meta.get("creationTimestamp")) or 0.0,
        phase=str((pod.get("status") or {}).get("phase") or "Unknown"),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        gpus=gpu_resources(extended_requests(pod)),
        ready=_ready(pod),
        deletion_cost=_deletion_cost(meta.get("annotations") or {}),
        owner=next(
            (
                str(o.get("name", ""))
                for o in meta.get("ownerReferences") or ()
                if isinstance(o, dict) and o.get("controller")
            ),
            "",
        ),
    )


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def _deletion_cost(annotations: Obj) -> int | None:
    """The pod-deletion-cost annotation as the ReplicaSet controller reads it (an int32;
    anything else it ignores, as we do)."""
    text = str(annotations.get(Annotations.POD_DELETION_COST, "")).strip()
    try:
        cost = int(text)
    except ValueError:
        return None
    return cost if -(2**31) <= cost < 2**31 else None
