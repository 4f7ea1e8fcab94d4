"""The resource types the fake API serves, and its discovery documents."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_READ_VERBS = ("get", "list", "watch")


@dataclass(eq=False)
class CrdInfo:
    """What a CRD says about its kind (crds.py keeps it current as the CRD changes)."""

    schema: dict[str, Any] = field(default_factory=dict)
    columns: list[dict[str, Any]] = field(default_factory=list)


_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ScaleSpec:
    """Where a kind keeps the fields its ``/scale`` subresource reads and writes."""

    spec_replicas: str = "spec.replicas"
    status_replicas: str = "status.replicas"
    # A path to a ``LabelSelector`` object (built-ins) or to a selector string (CRDs).
    label_selector: str = "spec.selector"


@dataclass(frozen=True)
class ResourceType:
    """One served resource, e.g. ``apps/v1 deployments``.

    ``group`` is ``""`` for the core API. ``has_status`` means status is a
    subresource: writes to the main resource keep the stored status, writes to
    ``/status`` keep everything else.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    has_status: bool = True
    scale: ScaleSpec | None = None
    # PUT to a missing object creates it (true for Leases and Events upstream).
    create_on_update: bool = False
    categories: tuple[str, ...] = ()
    # A custom resource's schema and printer columns (crds.py); None for built-ins.
    crd: CrdInfo | None = field(default=None, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def discovery_entries(self) -> list[dict[str, Any]]:
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(_ALL_VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        if self.has_status:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if self.scale is not None:
            entries.append(
                {
                    "name": f"{self.plural}/scale",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        return entries


_WORKLOAD_SCALE = ScaleSpec()

BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", namespaced=False, short_names=("ns",)),
    ResourceType("", "v1", "Pod", "pods", short_names=("po",), categories=("all",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", short_names=("cm",), has_status=False),
    ResourceType(
        "", "v1", "Event", "events", short_names=("ev",), has_status=False, create_on_update=True
    ),
    ResourceType(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        short_names=("ev",),
        has_status=False,
        create_on_update=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        short_names=("deploy",),
        scale=_WORKLOAD_SCALE,
        categories=("all",),
    ),
    ResourceType(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        short_names=("sts",),
        scale=_WORKLOAD_SCALE,
        categories=("all",),
    ),
    ResourceType(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        short_names=("rs",),
        scale=_WORKLOAD_SCALE,
        categories=("all",),
    ),
    ResourceType("batch", "v1", "Job", "jobs", categories=("all",)),
    ResourceType("batch", "v1", "CronJob", "cronjobs", short_names=("cj",), categories=("all",)),
    ResourceType(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        short_names=("hpa",),
        categories=("all",),
    ),
    ResourceType(
        "coordination.k8s.io", "v1", "Lease", "leases", has_status=False, create_on_update=True
    ),
    ResourceType("kubeflow.org", "v1", "Notebook", "notebooks"),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
        short_names=("crd", "crds"),
    ),
    # Answered, never stored: `kubectl auth can-i` (handlers.py).
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        namespaced=False,
        has_status=False,
    ),
)


@dataclass
class ResourceRegistry:
    """Lookup of served resource types by URL coordinates or by kind."""

    types: list[ResourceType] = field(default_factory=list)

    @classmethod
    def with_builtins(cls, extra: Iterable[ResourceType] = ()) -> ResourceRegistry:
        registry = cls()
        for rtype in (*BUILTIN_RESOURCES, *extra):
            registry.add(rtype)
        return registry

    def add(self, rtype: ResourceType) -> None:
        if self.find(rtype.group, rtype.version, rtype.plural) is not None:
            raise ValueError(
                f"resource {rtype.plural}.{rtype.group}/{rtype.version} already served"
            )
        self.types.append(rtype)

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        for rtype in self.types:
            if (rtype.group, rtype.version, rtype.plural) == (group, version, plural):
                return rtype
        return None

    def for_kind(self, kind: str, api_version: str | None = None) -> ResourceType:
        """The type for ``kind`` (a Kind, plural or short name), optionally of ``api_version``."""
        wanted = kind.lower()
        matches = [
            rtype
            for rtype in self.types
            if wanted in (rtype.kind.lower(), rtype.plural, *rtype.short_names)
            and (api_version is None or rtype.api_version == api_version)
        ]
        if not matches:
            raise KeyError(f"no served resource for kind {kind!r} (apiVersion {api_version!r})")
        # The core group wins an ambiguity (Event), as kubectl prefers it too.
        return matches[0]

    def groups(self) -> dict[str, list[str]]:
        """Named groups (not core) and their versions, in registration order."""
        found: dict[str, list[str]] = {}
        for rtype in self.types:
            if rtype.group:
                versions = found.setdefault(rtype.group, [])
                if rtype.version not in versions:
                    versions.append(rtype.version)
        return found

    def in_group_version(self, group: str, version: str) -> Sequence[ResourceType]:
        return [t for t in self.types if (t.group, t.version) == (group, version)]


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list(registry: ResourceRegistry) -> dict[str, Any]:
    groups = []
    for name, versions in registry.groups().items():
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, group: str) -> dict[str, Any] | None:
    versions = registry.groups().get(group)
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def api_resource_list(
    registry: ResourceRegistry, group: str, version: str
) -> dict[str, Any] | None:
    served = registry.in_group_version(group, version)
    if not served:
        return None
    resources = [entry for rtype in served for entry in rtype.discovery_entries()]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-guardian-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
