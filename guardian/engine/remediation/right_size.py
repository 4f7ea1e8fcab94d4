"""``partial: rightSize``: remove exactly the idle replicas of a partly idle workload,
where the kind lets a scale-down choose them, else say what would (advice).

Pure: the workload as read (its member pods) and the evidence's verdicts in; a
``RightSize`` or the reason there is none out. What a scale-down removes is Kubernetes'
rule, not ours:

- a ReplicaSet (a Deployment's) deletes, among pods equal on every earlier rank
  (scheduled, Running, Ready), the lowest ``controller.kubernetes.io/pod-deletion-cost``
  first: so every pod must be scheduled, Running and Ready, the pod count must be the
  replica count, only one ReplicaSet may own them (no rollout), and the idle pods get a
  cost lower than every pod that stays;
- a StatefulSet removes its highest ordinals: the idle pods must be exactly those;
- a Job (its parallelism), a workload an HPA scales, and one pod holding several GPUs
  are never right-sized: advice only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from guardian.engine.remediation.candidate import Candidate
from guardian.engine.remediation.evidence import Coverage
from guardian.model.policies import Annotations, PartialAction
from guardian.model.reclaim import ActionKind, MemberPod, RightSize, Wait, WorkloadState
from guardian.model.remediation_events import HoldKind
from guardian_common.words import plural

INT32_MIN = -(2**31)
_SCALED_BY_REPLICASET = ("Deployment", "ReplicaSet")


def advice(covered: Coverage) -> str:
    """What a person could do about the idle parts we will not remove (multi-GPU pods)."""
    said = [
        f"{v.pod} uses {v.gpus - v.idle_gpus} of its {v.gpus} GPUs: request {v.gpus - v.idle_gpus}"
        for v in covered.pods
        if v.some_idle and not v.idle and v.gpus > v.idle_gpus
    ]
    return "; ".join(said)


def _unsettled(members: Sequence[MemberPod]) -> list[str]:
    return [
        m.name for m in members if m.deleting or m.phase != "Running" or not m.node or not m.ready
    ]


def _statefulset(ws: WorkloadState, idle: set[str], keep: int) -> str:
    """Why the idle pods are not the ordinals a scale-down to ``keep`` removes ("" if so)."""
    top = {f"{ws.ref.name}-{i}" for i in range(keep, ws.replicas or 0)}
    if idle == top:
        return ""
    return (
        f"its idle pods ({', '.join(sorted(idle))}) are not its highest ordinals: a "
        f"scale-down to {keep} removes {', '.join(sorted(top)) or 'none'}"
    )


def _cost(stay: Sequence[MemberPod]) -> int | str:
    """A pod-deletion-cost below every pod that stays, or why there is none."""
    lowest = min((m.deletion_cost or 0 for m in stay), default=0)
    if lowest - 1 < INT32_MIN:
        return "a pod that stays already has the lowest pod-deletion-cost there is"
    return min(-1, lowest - 1)


def _shape(ws: WorkloadState, members: Sequence[MemberPod]) -> str:
    """Why the kind or the state of ``ws`` does not let a scale-down pick pods ("" if it does)."""
    kind = ws.ref.kind
    if ws.action is not ActionKind.SCALE or kind not in (*_SCALED_BY_REPLICASET, "StatefulSet"):
        return f"a {kind} cannot be scaled to remove chosen pods"
    if ws.hpa is not None:
        return f"HorizontalPodAutoscaler {ws.hpa.name} scales it and would undo a right-size"
    if ws.replicas is None or len(members) != ws.replicas:
        replicas = "unknown replicas" if ws.replicas is None else plural(ws.replicas, "replica")
        return f"{plural(len(members), 'pod')} for {replicas}: a scale-down could remove any"
    unsettled = _unsettled(members)
    if unsettled:
        return (
            f"{', '.join(unsettled[:3])} not scheduled, Running and Ready: a scale-down "
            "removes such pods first"
        )
    if kind in _SCALED_BY_REPLICASET and len({m.owner for m in members}) > 1:
        return "a rollout is in progress (its pods belong to more than one ReplicaSet)"
    return ""


def right_size(ws: WorkloadState, covered: Coverage) -> RightSize | str:
    """The right-size of a partly idle ``ws``, or why it gets advice only."""
    members = [m for m in ws.members or () if m.phase not in ("Succeeded", "Failed")]
    why = _shape(ws, members)
    if why:
        return why
    idle: set[str] = {v.pod for v in covered.pods if v.idle}
    if not idle:
        return "none of its pods is idle as a whole"
    keep = (ws.replicas or 0) - len(idle)
    if keep < 1:
        return "all of its pods are idle"
    if ws.ref.kind == "StatefulSet":
        why = _statefulset(ws, idle, keep)
        return why or RightSize(keep, tuple(sorted(idle)), None)
    cost = _cost([m for m in members if m.name not in idle])
    if isinstance(cost, str):
        return cost
    return RightSize(keep, tuple(sorted(idle)), cost)


def only(ws: WorkloadState, pods: Sequence[str]) -> WorkloadState:
    """``ws`` as if it were only ``pods``: what a right-size frees (demand is judged on it)."""
    keep = set(pods)
    members = None if ws.members is None else tuple(m for m in ws.members if m.name in keep)
    return replace(ws, pods=tuple(p for p in ws.pods if p in keep), members=members)


def still_running(ws: WorkloadState) -> str:
    """After a right-size: the idle pods it asked to remove that still run, as a reason
    ("" when none, or when they cannot be told)."""
    listed = ws.annotations.get(Annotations.RIGHT_SIZED_PODS, "")
    if not listed or ws.members is None:
        return ""
    removed = set(listed.split(","))
    left = sorted(m.name for m in ws.members if m.name in removed and not m.deleting)
    if not left:
        return ""
    return (
        f"right-sized to {ws.annotations.get(Annotations.RIGHT_SIZED_TO, '?')}, but its idle "
        f"pods {', '.join(left)} still run: the scale-down removed others; restore it "
        "(guardian restore) and look at its pods"
    )


def partly_idle(c: Candidate, covered: Coverage) -> RightSize | Wait:
    """A workload the evidence does not cover as a whole: its right-size where the policy
    asks for one and the kind allows it; else a wait that names the idle and the other
    parts, with advice (never a reclaim)."""
    why = covered.reason()
    if covered.partial and c.policy.spec.partial is PartialAction.RIGHT_SIZE:
        sized = right_size(c.ws, covered)
        if isinstance(sized, RightSize):
            return sized
        why = f"{why}; not right-sized: {sized}"
    tip = advice(covered)
    if tip:
        why = f"{why}; advice: {tip}"
    held = c.wait(why, kind=HoldKind.EVIDENCE)
    return replace(held, partly_idle=covered.partial)
