"""What a policy adds before a step: active windows, demand, the checkpoint handshake.

Each gate is pure: the policy (and, for a team's policy, its cluster policy), the
workload as read, and ``now`` in; a decision with its reason out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
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
    """(why the reclaim waits for demand or None, what to add to the reclaim's reason).
    Only a pod shown to fit a node the workload frees lets it go ahead."""
    condition = policy.spec.reclaim
    if condition.when is ReclaimWhen.ALWAYS:
        return None, ""
    if snapshot.pending_pods is None:
        return "reclaim.when is demand and the Pending pods are not known yet", ""
    found = demand(ws, snapshot, condition.pending_for, now)
    if not found.holds:
        return "reclaim.when is demand and its pods request no extended resource (GPU)", ""
    if found.waiting:
        return None, f"; waiting for its GPUs: {found.who()}"
    if any(v.unread for v in found.misfits):
        return f"reclaim.when is demand and {found.unknown()}", ""
    if found.misfits:
        return f"no demand: {found.none_fits()}", ""
    return (
        f"no demand: no pod that could use its GPUs ({found.holding()} on one node) has "
        f"been Pending for {condition.pending_for:.0f}s"
    ), ""


class Handshake(Enum):
    REQUEST = "request"  # set reclaim-requested-at now
    WAIT = "wait"
    RECLAIM = "reclaim"
    GIVE_UP = "give-up"


def annotation_time(ts: float) -> str:
    """How the controller writes a time that a workload answers (``reclaim-requested-at``):
    RFC 3339, whole seconds."""
    return rfc3339(ts)


def as_written(ts: float) -> float:
    """``ts`` at the precision ``annotation_time`` writes it (the fraction of a second cut,
    as ``rfc3339`` cuts it): the ledger's exact time and the same time read back from the
    object compare equal, and an acknowledgement is compared at that precision too."""
    return datetime.fromtimestamp(ts, tz=UTC).replace(microsecond=0).timestamp()


@dataclass(frozen=True)
class Move:
    """The handshake's next move, its reason, and (once asked) the checkpoint deadline."""

    kind: Handshake
    why: str
    deadline: float | None = None


def checkpoint(
    policy: ReclaimPolicy, ws: WorkloadState, requested: float | None, now: float
) -> Move:
    """The handshake's next move and its reason. ``requested``: when this episode asked.
    An acknowledgement counts when it is not older than the request, even after the
    timeout (a late one): the workload says its state is safe. Both are compared in whole
    seconds, the precision of the annotations: an acknowledgement written in the second
    of the request counts."""
    spec = policy.spec.checkpoint
    if not spec.enabled:
        return Move(Handshake.RECLAIM, "")
    if requested is None:
        return Move(
            Handshake.REQUEST,
            f"checkpoint requested ({Annotations.RECLAIM_REQUESTED_AT}); reclaim after "
            f"{Annotations.CHECKPOINTED_AT} or in {spec.timeout:.0f}s",
            as_written(now) + spec.timeout,
        )
    requested = as_written(requested)
    acked = parse_rfc3339(ws.annotations.get(Annotations.CHECKPOINTED_AT))
    deadline = requested + spec.timeout
    if acked is not None and as_written(acked) >= requested:
        late = " (after the timeout)" if as_written(acked) > deadline else ""
        return Move(Handshake.RECLAIM, f"; checkpointed at {rfc3339(acked)}{late}", deadline)
    if now < deadline:
        return Move(
            Handshake.WAIT,
            f"waiting for {Annotations.CHECKPOINTED_AT} >= {rfc3339(requested)} until "
            f"{rfc3339(deadline)}",
            deadline,
        )
    if spec.on_timeout is OnTimeout.GIVE_UP:
        return Move(
            Handshake.GIVE_UP,
            f"no checkpoint acknowledged by {rfc3339(deadline)}: gave up (onTimeout: giveUp); "
            f"set {Annotations.CHECKPOINTED_AT} to reclaim",
            deadline,
        )
    return Move(Handshake.RECLAIM, f"; no checkpoint acknowledged by {rfc3339(deadline)}", deadline)


def requested_at(ws: WorkloadState, recorded: float | None, notified: float) -> float | None:
    """When this episode asked for a checkpoint, as written on the object: the ledger's
    step, else the annotation when it is not older than the episode's notification
    (state lives on the object). Either way in whole seconds (``as_written``), so that an
    acknowledgement compares the same before and after a restart."""
    if recorded is not None:
        return as_written(recorded)
    on_object = parse_rfc3339(ws.annotations.get(Annotations.RECLAIM_REQUESTED_AT))
    if on_object is None:
        return None
    on_object = as_written(on_object)
    return on_object if on_object >= as_written(notified) else None
