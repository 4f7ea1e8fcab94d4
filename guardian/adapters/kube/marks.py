"""Every object in the cluster that carries an annotation of ours (``gpu-guardian.io/``):
what ``guardian restore --all`` restores and, for an uninstall, clears.

The annotations are the record (a reclaim keeps everything a restore needs on the
workload), so the cluster is read, not the controller's shared state: a workload
reclaimed by an older controller, or whose episode record is gone, is found all the
same. Read: every kind the controller can act on that the API serves (anything with a
``/scale`` subresource, Jobs, CronJobs, Notebooks, bare Pods) in every namespace, and
the Namespaces themselves (opt-outs, snoozes, the kill switch). Lists are paginated.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from guardian.adapters.kube.rest import KubeRest, Obj, object_path
from guardian.model.policies import NOTEBOOK_STOPPED, PREFIX, Annotations
from guardian.model.remediation_events import WorkloadRef

PAGE = 500
# Roots the controller acts on without a /scale subresource (engine/owners.py).
_ALWAYS = {("batch", "Job"), ("batch", "CronJob"), ("kubeflow.org", "Notebook"), ("", "Pod")}
# Written by us, but not under our prefix: a stopped notebook's marker.
_FOREIGN_KEYS = (NOTEBOOK_STOPPED,)


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool


@dataclass(frozen=True)
class Marked:
    """One object with annotations of ours: which, and whether it is reclaimed."""

    ref: WorkloadRef  # a Namespace: api_version v1, kind Namespace, namespace ""
    keys: tuple[str, ...]

    @property
    def reclaimed(self) -> bool:
        return Annotations.RECLAIMED_AT in self.keys


def ours(annotations: dict[str, str]) -> tuple[str, ...]:
    """Our keys among ``annotations``: the prefix, and a notebook stopped by a reclaim."""
    reclaimed = Annotations.RECLAIMED_AT in annotations
    keys = [k for k in annotations if k.startswith(PREFIX)]
    keys += [k for k in _FOREIGN_KEYS if reclaimed and k in annotations]
    return tuple(sorted(keys))


def _group_versions(rest: KubeRest) -> list[str]:
    groups = rest.get("/apis").get("groups", [])
    return ["v1", *(str(g["preferredVersion"]["groupVersion"]) for g in groups)]


def actionable_kinds(rest: KubeRest) -> list[Kind]:
    """The served kinds the controller may have acted on, from API discovery."""
    found: list[Kind] = []
    for api_version in _group_versions(rest):
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        resources = rest.get(path).get("resources", [])
        names = {str(r["name"]) for r in resources}
        group = api_version.rpartition("/")[0]
        for res in resources:
            name, kind = str(res["name"]), str(res["kind"])
            if "/" in name or "list" not in res.get("verbs", ["list"]):
                continue
            if (group, kind) in _ALWAYS or f"{name}/scale" in names:
                found.append(Kind(api_version, kind, name, bool(res.get("namespaced"))))
    return found


def _pages(rest: KubeRest, path: str) -> Iterator[Obj]:
    token = ""
    while True:
        query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
        listing = rest.get(path, query)
        yield from listing.get("items") or []
        token = str((listing.get("metadata") or {}).get("continue") or "")
        if not token:
            return


def _marked(kind: Kind, obj: Obj) -> Marked | None:
    meta = obj.get("metadata") or {}
    keys = ours({str(k): str(v) for k, v in (meta.get("annotations") or {}).items()})
    if not keys:
        return None
    namespace = str(meta.get("namespace") or "") if kind.namespaced else ""
    return Marked(WorkloadRef(kind.api_version, kind.kind, namespace, str(meta["name"])), keys)


def find_marked(rest: KubeRest, *, namespaces: bool = True) -> list[Marked]:
    """Every workload (and, with ``namespaces``, every Namespace) carrying our annotations,
    sorted by namespace, kind and name."""
    kinds = actionable_kinds(rest)
    if namespaces:
        kinds.append(Kind("v1", "Namespace", "namespaces", namespaced=False))
    found: list[Marked] = []
    for kind in kinds:
        for obj in _pages(rest, object_path(kind.api_version, kind.plural, None)):
            marked = _marked(kind, obj)
            if marked is not None:
                found.append(marked)
    return sorted(found, key=lambda m: (m.ref.namespace, m.ref.kind, m.ref.name))
