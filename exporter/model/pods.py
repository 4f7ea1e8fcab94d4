"""What the exporter knows about the pods on its node, from the Kubernetes API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class PodInfo:
    uid: str  # lowercase, dashed: the form cgroup attribution produces
    namespace: str
    name: str
    phase: str
    labels: Mapping[str, str] = field(default_factory=dict)
    # container name -> resource name -> quantity, from spec.containers[].resources.limits
    container_limits: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # container ID (lowercase, as cgroup attribution gives it) -> container name, from
    # status.{initContainer,container,ephemeralContainer}Statuses[].containerID
    container_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


@dataclass(frozen=True, slots=True)
class PodDirectory:
    """An immutable view of the node's pods, swapped whole on every change."""

    by_uid: Mapping[str, PodInfo] = field(default_factory=dict)  # live pods only
    # (namespace, name) of Succeeded/Failed pods: the kubelet may still list their devices.
    finished: frozenset[tuple[str, str]] = frozenset()
    up: bool = False  # the API answered the last list or watch
    synced: bool = False  # at least one full list has arrived

    def by_name(self, namespace: str, name: str) -> PodInfo | None:
        for pod in self.by_uid.values():
            if pod.namespace == namespace and pod.name == name:
                return pod
        return None
