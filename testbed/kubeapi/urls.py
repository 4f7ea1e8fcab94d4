"""URL paths to routes: discovery documents, collections, objects and subresources."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.kubeapi import errors
from testbed.kubeapi.resources import ResourceRegistry, ResourceType

SUBRESOURCES = frozenset({"status", "scale"})


@dataclass(frozen=True)
class Discovery:
    """A discovery document: ``/api``, ``/apis``, ``/apis/<group>`` or ``/<prefix>/<gv>``."""

    group: str | None = None  # None with version None: /api or /apis
    version: str | None = None
    legacy: bool = False  # /api (core) rather than /apis


@dataclass(frozen=True)
class ResourceRoute:
    rtype: ResourceType
    namespace: str | None  # None: across all namespaces (or a cluster-scoped kind)
    name: str | None = None
    subresource: str = ""

    @property
    def scope_namespace(self) -> str:
        """The namespace key objects are stored under (``""`` for cluster-scoped kinds)."""
        return self.namespace or "" if self.rtype.namespaced else ""


Route = Discovery | ResourceRoute


def _not_found(path: str) -> errors.ApiError:
    return errors.ApiError(404, f"the server could not find the requested resource ({path})")


def parse_path(registry: ResourceRegistry, path: str) -> Route | None:
    """The route for ``path``; ``None`` for non-API paths such as ``/version``."""
    parts = [part for part in path.split("/") if part]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        if len(parts) == 1:
            return Discovery(legacy=True)
        group, version, rest = "", parts[1], parts[2:]
        if not rest:
            return Discovery(group="", version=version, legacy=True)
    else:
        if len(parts) == 1:
            return Discovery()
        if len(parts) == 2:
            return Discovery(group=parts[1])
        group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            return Discovery(group=group, version=version)
    return _resource_route(registry, path, group, version, rest)


def _resource_route(
    registry: ResourceRegistry, path: str, group: str, version: str, rest: list[str]
) -> ResourceRoute:
    namespace: str | None = None
    # /namespaces/<ns>/<plural>/... is namespaced; /namespaces/<name>[/status] is the Namespace.
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in SUBRESOURCES | {"finalize"}:
        namespace, rest = rest[1], rest[2:]
    rtype = registry.find(group, version, rest[0])
    if rtype is None or len(rest) > 3:
        raise _not_found(path)
    if namespace is not None and not rtype.namespaced:
        raise _not_found(path)
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and (
        subresource not in SUBRESOURCES
        or (subresource == "status" and not rtype.has_status)
        or (subresource == "scale" and rtype.scale is None)
    ):
        raise _not_found(path)
    return ResourceRoute(rtype, namespace, name, subresource)
