"""A workload's pods over time, from the allocation series: the members a replay judges.

The controller reads a workload's pods from the API when it decides; a replay reads them
from history. Each series of the allocation metric is one GPU one pod held, sampled on
the replay's grid. At a cycle's time the workload's members are the pods that held a
GPU at most one step before or after it (a pod that appeared or went within a step is
counted: a pod that may exist holds a reclaim, as a new or a terminating one does),
each Running, on its node, holding the GPUs it held there. Its creation is one step
before it was first seen, except for a pod seen from the first point read, which is
older than anything the replay judges.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from guardian.model.reclaim import MemberPod

GPU_RESOURCE = "nvidia.com/gpu"  # what a member holds: the series count GPUs, not resources


def device_of(labels: Mapping[str, str]) -> str:
    """The GPU a series or an alert is about, as the planner tells them apart: ``uuid``
    (dcgm-exporter: ``UUID``), else node and ``gpu``."""
    for key in ("uuid", "UUID"):
        if labels.get(key):
            return labels[key]
    gpu = labels.get("gpu", "")
    node = labels.get("node") or labels.get("Hostname", "")
    return f"{node}/{gpu}" if gpu else ""


@dataclass(frozen=True)
class GpuTrack:
    """One GPU (or MIG device) one pod held: when, and when it was busy."""

    pod: str
    device: str  # as the alerts name it (device_of)
    node: str
    model: str
    held: tuple[int, ...]  # sorted timestamps (ms) at which the pod held it
    busy: tuple[int, ...] = ()  # sorted timestamps (ms) at which it was busy, held

    def holds_near(self, at_ms: int, step_ms: int) -> bool:
        """Held at a grid point at most one step from ``at_ms``."""
        i = bisect.bisect_left(self.held, at_ms - step_ms)
        return i < len(self.held) and self.held[i] <= at_ms + step_ms

    def first_busy(self, from_ms: int) -> int | None:
        i = bisect.bisect_left(self.busy, from_ms)
        return self.busy[i] if i < len(self.busy) else None

    def held_in(self, lo_ms: int, hi_ms: int) -> int:
        """Grid points held in ``[lo_ms, hi_ms)``."""
        return bisect.bisect_left(self.held, hi_ms) - bisect.bisect_left(self.held, lo_ms)


def members_at(
    tracks: Sequence[GpuTrack], now: float, step: float, since: float
) -> tuple[MemberPod, ...]:
    """The pods of ``tracks`` at ``now``, as :class:`MemberPod` (sorted by name)."""
    at, step_ms, first_read = round(now * 1000), round(step * 1000), round(since * 1000)
    by_pod: defaultdict[str, list[GpuTrack]] = defaultdict(list)
    for track in tracks:
        if track.held:
            by_pod[track.pod].append(track)
    members = []
    for pod, held in sorted(by_pod.items()):
        near = [t for t in held if t.holds_near(at, step_ms)]
        if not near:
            continue
        first = min(t.held[0] for t in held)
        created = 0.0 if first <= first_read else first / 1000 - step
        node = near[0].node
        gpus = {GPU_RESOURCE: len(near)}
        members.append(MemberPod(pod, "", created, "Running", node, gpus=gpus))
    return tuple(members)
