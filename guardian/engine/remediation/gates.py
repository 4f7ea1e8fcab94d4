"""What a policy adds before a step: active windows, demand, the checkpoint handshake.

Each gate is pure: the policy (and, for a team's policy, its cluster policy), the
workload as read, and ``now`` in; a decision with its reason out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from guardian.engine.remediation.demand import demand
from guardian.model.policies import Annotations, OnTimeout, ReclaimPolicy, ReclaimWhen
from guardian.model.policies_windows import next_window_start, windows_active
from guardian.model.reclaim import ClusterSnapshot, WorkloadState
from guardian.model.times import parse_rfc3339, rfc3339


def _chain(policy: ReclaimPolicy, parent: ReclaimPolicy | None) -> tuple[ReclaimPolicy, ...]:
    return (policy,) if parent is None else (policy, parent)


@dataclass(frozen=True)
class WindowState:
    open: bool
    opens_at: float  # now when open
    windows: tuple[str, ...]

    def why(self) -> str:
        return (
            f"outside the active windows ({'; '.join(self.windows)}): the ladder waits "
            f"until {rfc3339(self.opens_at)}"
        )


def window_state(policy: ReclaimPolicy, parent: ReclaimPolicy | None, now: float) -> WindowState:
    """Open when every policy in the chain is inside one of its windows (or has none)."""
    chain = _chain(policy, parent)
    texts = tuple(w for p in chain for w in p.spec.active_windows)
    is_open = all(windows_active(p.spec.active_windows, now) for p in chain)
    opens = now if is_open else max(next_window_start(p.spec.active_windows, now) for p in chain)
    return WindowState(is_open, opens, texts)


def notify_outside(policy: ReclaimPolicy, parent: ReclaimPolicy | None) -> bool:
    return all(p.spec.notify_outside_windows for p in _chain(policy, parent))


def demand_wait(
    policy: ReclaimPolicy, ws: WorkloadState, snapshot: ClusterSnapshot, now: float
) -> tuple[str | None, str]:
    """(why the reclaim waits for demand or None, what to add to the reclaim's reason)."""
    condition = policy.spec.reclaim
    if condition.when is ReclaimWhen.ALWAYS:
        return None, ""
    if snapshot.pending_pods is None:
        return "reclaim.when is demand and the Pending pods are not known yet", ""
    found = demand(ws, snapshot.pod_owners, snapshot.pending_pods, condition.pending_for, now)
    if not found.holds:
        return "reclaim.when is demand and its pods request no extended resource (GPU)", ""
    if not found.waiting:
        return (
            f"no demand: no pod that could use its GPUs ({found.holding()} on one node) has "
            f"been Pending for {condition.pending_for:.0f}s"
        ), ""
    return None, f"; waiting for its GPUs: {found.who()}"


class Handshake(Enum):
    REQUEST = "request"  # set reclaim-requested-at now
    WAIT = "wait"
    RECLAIM = "reclaim"
    GIVE_UP = "give-up"


def checkpoint(
    policy: ReclaimPolicy, ws: WorkloadState, requested: float | None, now: float
) -> tuple[Handshake, str]:
    """The handshake's next move and its reason. ``requested``: when this episode asked.
    An acknowledgement counts when it is not older than the request, even after the
    timeout (a late one): the workload says its state is safe."""
    spec = policy.spec.checkpoint
    if not spec.enabled:
        return Handshake.RECLAIM, ""
    if requested is None:
        return Handshake.REQUEST, (
            f"checkpoint requested ({Annotations.RECLAIM_REQUESTED_AT}); reclaim after "
            f"{Annotations.CHECKPOINTED_AT} or in {spec.timeout:.0f}s"
        )
    acked = parse_rfc3339(ws.annotations.get(Annotations.CHECKPOINTED_AT))
    deadline = requested + spec.timeout
    if acked is not None and acked >= requested:
        late = " (after the timeout)" if acked > deadline else ""
        return Handshake.RECLAIM, f"; checkpointed at {rfc3339(acked)}{late}"
    if now < deadline:
        return Handshake.WAIT, (
            f"waiting for {Annotations.CHECKPOINTED_AT} >= {rfc3339(requested)} until "
            f"{rfc3339(deadline)}"
        )
    if spec.on_timeout is OnTimeout.GIVE_UP:
        return Handshake.GIVE_UP, (
            f"no checkpoint acknowledged by {rfc3339(deadline)}: gave up (onTimeout: giveUp); "
            f"set {Annotations.CHECKPOINTED_AT} to reclaim"
        )
    return Handshake.RECLAIM, f"; no checkpoint acknowledged by {rfc3339(deadline)}"


def requested_at(ws: WorkloadState, recorded: float | None, notified: float) -> float | None:
    """When this episode asked for a checkpoint: the ledger's step, else the annotation
    when it is newer than the episode's notification (state lives on the object)."""
    if recorded is not None:
        return recorded
    on_object = parse_rfc3339(ws.annotations.get(Annotations.RECLAIM_REQUESTED_AT))
    return on_object if on_object is not None and on_object >= notified else None
