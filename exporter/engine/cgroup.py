"""Parse ``/proc/<pid>/cgroup`` text into a pod UID and a container ID.

Every line is read: cgroup v1 (one line per hierarchy), v2 (the single ``0::`` line) and hybrid
hosts (both). The forms, with their sources, are tabled in docs/exporter.md ("Attribution"):

- cgroupfs driver: ``/kubepods/burstable/pod<uid>/<container id>`` (Guaranteed pods have no QoS
  level), CRI-O's ``crio-<id>`` directory;
- systemd driver: ``…/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope`` (also
  ``crio-<id>.scope``, ``docker-<id>.scope``, and crun's ``…scope/container`` sub-cgroup);
- the colon notation ``kubepods-…-pod<uid_>.slice:<runtime prefix>:<id>``: a systemd
  ``cgroupsPath`` that a runtime in cgroupfs mode wrote literally, as one path component.

Prefixes before the pod component (kind's ``/kubelet.slice/kubelet-kubepods…``, a node
container's ``/docker/<id>/``, ``..`` of a cgroup namespace) do not matter. Letter case does
not matter either; UIDs and IDs come out lowercase. An identifier of the wrong shape is never
guessed at: a malformed pod UID means no pod, a container ID that is not 64 hex digits means no
container, and lines that name different pods mean no pod at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from exporter.model.attribution import NO_POD, CgroupIdentity

_HEX = "[0-9a-f]"
_UID = (
    # One separator throughout: dashes (the API's form) or underscores (systemd-escaped).
    rf"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
    rf"|{_HEX}{{8}}_{_HEX}{{4}}_{_HEX}{{4}}_{_HEX}{{4}}_{_HEX}{{12}}"
    # Static (mirror) pods use the 32-hex config hash as their UID.
    rf"|{_HEX}{{32}}"
)
# cgroupfs: "pod<uid>"; systemd: "[<root>-]kubepods[-<qos>]-pod<uid_>.slice".
_POD_COMPONENT = re.compile(
    rf"^(?:[a-z0-9_]+(?:-[a-z0-9_]+)*-)?pod(?P<uid>{_UID})(?:\.slice)?$", re.IGNORECASE
)
# "<id>", "<prefix>-<id>" or "<prefix>-<id>.scope"; the ID is checked separately.
_CONTAINER_COMPONENT = re.compile(
    r"^(?:(?P<prefix>[a-z0-9]+(?:[-_][a-z0-9]+)*)-)?(?P<id>[0-9a-z]+)(?:\.scope)?$",
    re.IGNORECASE,
)
# containerd, CRI-O and Docker all name containers by 64 hex digits (a SHA-256).
_CONTAINER_ID = re.compile(rf"^{_HEX}{{64}}$", re.IGNORECASE)
_DELETED = " (deleted)"  # v2 marks a removed cgroup this way


def normalize_pod_uid(raw: str) -> str:
    """Kubernetes spells UIDs with dashes in lowercase; the systemd driver uses underscores."""
    return raw.replace("_", "-").lower()


def _components(path: str) -> Iterator[str]:
    """Path components, with ``slice:prefix:id`` split into the slice and ``prefix-id``."""
    for component in path.split("/"):
        if ":" not in component:
            yield component
            continue
        parts = component.split(":")
        yield parts[0]
        if len(parts) == 3:  # runc's "slice:prefix:name"; anything else names no container
            prefix, name = parts[1], parts[2]
            yield f"{prefix}-{name}" if prefix else name
        else:
            yield ""


def container_id_of(component: str) -> str | None:
    """The container ID a component directly below the pod names, or None.

    A runtime helper that carries the container's ID (CRI-O's ``crio-conmon-<id>``) is not
    the container, and an ID that is not exactly 64 hex digits is no ID at all.
    """
    match = _CONTAINER_COMPONENT.match(component)
    if match is None:
        return None
    prefix = (match.group("prefix") or "").lower()
    if prefix.endswith("conmon"):
        return None
    raw = match.group("id")
    return raw.lower() if _CONTAINER_ID.match(raw) else None


def parse_cgroup_path(path: str) -> CgroupIdentity:
    """The pod and container named by one cgroup path, or NO_POD.

    The outermost pod component wins: a workload can create cgroups below its own (and name
    them as it likes), never above, so only the outermost one is the kubelet's.
    """
    components = list(_components(path.strip().removesuffix(_DELETED)))
    for i, component in enumerate(components):
        match = _POD_COMPONENT.match(component)
        if match is None:
            continue
        below = components[i + 1] if i + 1 < len(components) else ""
        return CgroupIdentity(
            pod_uid=normalize_pod_uid(match.group("uid")), container_id=container_id_of(below)
        )
    return NO_POD


def parse_cgroup_file(text: str) -> CgroupIdentity:
    """Read every line of a ``/proc/<pid>/cgroup`` file.

    All lines that name a pod must name the same one, or the process is unattributed. The
    container is the one those lines name; a line at pod level (e.g. a v1 controller mounted
    only there) adds nothing, and two different containers mean no container.
    """
    pod_uid: str | None = None
    containers: set[str] = set()
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        found = parse_cgroup_path(parts[2])
        if found.pod_uid is None:
            continue
        if pod_uid is not None and found.pod_uid != pod_uid:
            return NO_POD
        pod_uid = found.pod_uid
        if found.container_id is not None:
            containers.add(found.container_id)
    if pod_uid is None:
        return NO_POD
    container = next(iter(containers)) if len(containers) == 1 else None
    return CgroupIdentity(pod_uid=pod_uid, container_id=container)
