"""Whole-workload evidence: a reclaim stops all of a root, so its evidence must cover all of it.

Alerts are about one GPU, or one pod's share of one; a reclaim scales, suspends, stops or
deletes the whole root. The root is wholly idle only when, among the pods it owns now (read
from the API, not from the alerts):

- every pod that holds a GPU is Running and not terminating (a Pending pod is waiting, not
  idle; a terminating one may be replaced);
- each such pod is the one the alerts about it mean: the alert's ``pod_uid`` is its UID or,
  where the series carry none, the pod is older than the alert and than the window the
  rule looks back over (else the evidence is, at least partly, about an earlier pod of the
  same name);
- every GPU it holds is covered by a firing alert the governing policy reclaims on, told
  apart by the alert's GPU (``uuid``, dcgm-exporter's ``UUID``, else node and ``gpu``).

A replica that does not exist yet runs nothing; once its controller creates it, it is a
pod newer than the evidence, and holds the reclaim.

A pod or GPU with no such alert is busy or unknown, and either holds the reclaim. The
answer names the idle parts and the others, so that Slack, Events and the ledger can say
"partly idle" with the parts named.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from guardian.model.labels import node_of
from guardian.model.reclaim import PARTLY_IDLE, FiringAlert, MemberPod, WorkloadState
from guardian.model.times import rfc3339
from guardian_common.words import plural

_DONE = ("Succeeded", "Failed")
_SHOWN = 4  # pods named in a reason; the rest are counted


def is_gpu_resource(name: str) -> bool:
    """A device plugin resource that is a GPU or part of one: ``nvidia.com/gpu``,
    ``nvidia.com/gpu.shared``, ``nvidia.com/mig-1g.10gb``, ``amd.com/gpu``,
    ``gpu.intel.com/i915``."""
    domain, slash, resource = name.lower().partition("/")
    if not slash or domain.endswith("kubernetes.io"):
        return False
    return "gpu" in domain or "gpu" in resource or resource.startswith("mig-")


def gpu_resources(requests: Mapping[str, int]) -> dict[str, int]:
    return {r: n for r, n in requests.items() if n > 0 and is_gpu_resource(r)}


def _device(labels: Mapping[str, str]) -> str:
    """Which GPU (or MIG instance) an alert is about; "" when it names none (it then
    covers one). Ours gives each MIG instance its own ``uuid``; dcgm-exporter names an
    instance by its GPU's ``UUID`` and its ``GPU_I_ID``."""
    instance = labels.get("GPU_I_ID", "")
    for key in ("uuid", "UUID"):
        if labels.get(key):
            return f"{labels[key]}/{instance}" if instance else labels[key]
    gpu = labels.get("gpu", "")
    return f"{node_of(labels)}/{gpu}" + (f"/{instance}" if instance else "") if gpu else ""


@dataclass(frozen=True)
class PodVerdict:
    pod: str
    idle: bool
    why: str  # what the pod's evidence is, in a few words
    some_idle: bool = False  # at least one of its GPUs is (a pod with j of m GPUs idle)
    gpus: int = 0  # the GPUs it holds
    idle_gpus: int = 0  # of which the alerts show idle


@dataclass(frozen=True)
class Coverage:
    """What the evidence covers of one root: its pods judged one by one."""

    pods: tuple[PodVerdict, ...]
    problem: str = ""  # about the root as a whole (its pods unread, none holding a GPU)

    @property
    def idle(self) -> tuple[PodVerdict, ...]:
        return tuple(p for p in self.pods if p.idle)

    @property
    def other(self) -> tuple[PodVerdict, ...]:
        return tuple(p for p in self.pods if not p.idle)

    @property
    def whole(self) -> bool:
        return not self.problem and bool(self.pods) and not self.other

    @property
    def partial(self) -> bool:
        """Some of it is idle, not all: its own outcome, never a reclaim."""
        return any(p.idle or p.some_idle for p in self.pods) and not self.whole

    def reason(self) -> str:
        """Why the root may not be reclaimed ("" when it is wholly idle)."""
        if self.whole:
            return ""
        if self.problem and not self.pods:
            return f"not reclaimed: {self.problem}"
        parts = [f"{len(self.idle)} of {plural(len(self.pods), 'pod')} idle"]
        if self.idle:
            parts.append("idle: " + _names(self.idle))
        if self.other:
            parts.append("not idle: " + _names(self.other))
        if self.problem:
            parts.append(self.problem)
        head = PARTLY_IDLE if self.partial else "not idle"
        return f"{head}, not reclaimed ({'; '.join(parts)})"


def _names(verdicts: Iterable[PodVerdict]) -> str:
    shown = list(verdicts)
    text = ", ".join(f"{v.pod} ({v.why})" for v in shown[:_SHOWN])
    return text + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else "")


def _not_about(pod: MemberPod, alert: FiringAlert, now: float) -> str:
    """Why ``alert`` is not evidence about ``pod`` ("" when it is)."""
    uid = alert.labels.get("pod_uid", "")
    if uid and pod.uid:
        return "" if uid == pod.uid else f"its alerts are about pod UID {uid}"
    created = rfc3339(pod.created_at)
    if alert.active_at < pod.created_at:
        return f"created {created}, after its alerts began"
    if alert.window and pod.created_at > now - alert.window:
        # Without a pod UID the window may hold an earlier pod of the same name.
        return f"created {created}, inside the {alert.window / 60:g}m its alerts look back over"
    return ""


def _judge(pod: MemberPod, alerts: list[FiringAlert], now: float) -> PodVerdict | None:
    """One pod's evidence; None for a pod that holds no GPU and has no alert."""
    if pod.phase in _DONE:
        return None  # a finished pod holds nothing any more
    held = sum(gpu_resources(pod.gpus).values())
    if pod.deleting:
        return PodVerdict(pod.name, False, "terminating")
    if pod.phase != "Running":
        return None if held == 0 else PodVerdict(pod.name, False, pod.phase or "phase unknown")
    checked = [(a, _not_about(pod, a, now)) for a in alerts]
    current = [a for a, why in checked if not why]
    if checked and not current:
        return PodVerdict(pod.name, False, checked[0][1])
    if held == 0 and not current:
        return None
    devices = {_device(a.labels) for a in current}
    covered, needed = len(devices), max(held, 1)
    if covered >= needed:
        gpus = "GPU" if needed == 1 else f"{needed} GPUs"
        return PodVerdict(pod.name, True, f"its {gpus} idle" if needed > 1 else f"{gpus} idle")
    if covered == 0:
        return PodVerdict(pod.name, False, "busy or unknown: no idle alert")
    why = f"{covered} of its {needed} GPUs idle"
    return PodVerdict(pod.name, False, why, some_idle=True, gpus=needed, idle_gpus=covered)


def coverage(ws: WorkloadState, alerts: Iterable[FiringAlert], now: float) -> Coverage:
    """How much of ``ws`` the firing ``alerts`` (the governing policy's) show idle at
    ``now``."""
    if ws.members is None:
        return Coverage((), "the workload's pods could not be read")
    by_pod: defaultdict[str, list[FiringAlert]] = defaultdict(list)
    for alert in alerts:
        if alert.firing and alert.labels.get("namespace") == ws.ref.namespace:
            by_pod[alert.labels.get("pod", "")].append(alert)
    verdicts = [
        v
        for m in sorted(ws.members, key=lambda m: m.name)
        if (v := _judge(m, by_pod.get(m.name, []), now)) is not None
    ]
    problem = "" if verdicts else "none of its pods holds a GPU the alerts are about"
    return Coverage(tuple(verdicts), problem)
