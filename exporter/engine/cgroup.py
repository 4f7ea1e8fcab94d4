"""Parse ``/proc/<pid>/cgroup`` text into a pod UID and a container ID.

Every line is read: cgroup v1 (one line per hierarchy), v2 (the single ``0::`` line) and hybrid
hosts (both). Both kubelet cgroup drivers are handled:

- cgroupfs: ``/kubepods/burstable/pod<uid>/<container id>`` (Guaranteed pods have no QoS level:
  ``/kubepods/pod<uid>/...``), and CRI-O's ``crio-<id>`` directory;
- systemd: ``/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/
  cri-containerd-<id>.scope`` (also ``crio-<id>.scope`` and ``docker-<id>.scope``).

Prefixes before the kubepods part (kind's ``/kubelet.slice/kubelet-kubepods...``, a node
container's ``/docker/<id>/`` or k3s's ``/k3s/``) do not matter: the pod component is found
wherever it is, and only a component that *is* a pod component matches, never one that merely
starts with "pod".
"""

from __future__ import annotations

import re

from exporter.model.attribution import NO_POD, CgroupIdentity

_UID = r"[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}"
# Static (mirror) pods use the 32-hex config hash as their UID.
_HASH_UID = r"[0-9a-fA-F]{32}"
# cgroupfs: "pod<uid>"; systemd: "kubepods[-<qos>]-pod<uid_>.slice", possibly "kubelet-" prefixed.
_POD_COMPONENT = re.compile(
    rf"^(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?pod(?P<uid>{_UID}|{_HASH_UID})(?:\.slice)?$"
)
_CONTAINER_COMPONENT = re.compile(
    r"^(?:(?:cri-containerd|crio|docker|cri-o|containerd)-)?(?P<id>[0-9a-f]{12,64})(?:\.scope)?$"
)
_CONMON = re.compile(r"^crio-conmon-[0-9a-f]{12,64}(?:\.scope)?$")


def normalize_pod_uid(raw: str) -> str:
    """Kubernetes spells UIDs with dashes in lowercase; the systemd driver uses underscores."""
    return raw.replace("_", "-").lower()


def parse_cgroup_path(path: str) -> CgroupIdentity:
    """The pod and container named by one cgroup path, or NO_POD."""
    components = path.split("/")
    for i, component in enumerate(components):
        match = _POD_COMPONENT.match(component)
        if match is None:
            continue
        pod_uid = normalize_pod_uid(match.group("uid"))
        container_id: str | None = None
        if i + 1 < len(components):
            nxt = components[i + 1]
            found = _CONTAINER_COMPONENT.match(nxt)
            if found is not None and not _CONMON.match(nxt):
                container_id = found.group("id")
        return CgroupIdentity(pod_uid=pod_uid, container_id=container_id)
    return NO_POD


def parse_cgroup_file(text: str) -> CgroupIdentity:
    """Read every line of a ``/proc/<pid>/cgroup`` file.

    The first line that names a pod wins; a container ID missing there (e.g. a v1 controller
    that is only mounted at pod level) is taken from another line of the same pod.
    """
    best = NO_POD
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        found = parse_cgroup_path(parts[2].strip())
        if found.pod_uid is None:
            continue
        if best.pod_uid is None:
            best = found
        elif found.pod_uid == best.pod_uid and best.container_id is None:
            best = CgroupIdentity(pod_uid=best.pod_uid, container_id=found.container_id)
        if best.container_id is not None:
            break
    return best
