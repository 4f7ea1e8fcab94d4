"""Where a process lives: its pod and container, as read from its cgroup."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CgroupIdentity:
    pod_uid: str | None
    container_id: str | None


NO_POD = CgroupIdentity(pod_uid=None, container_id=None)
