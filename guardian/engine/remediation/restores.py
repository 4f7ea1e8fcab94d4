"""Restores the planner plans on its own: a reclaimed workload excluded since (it, or its
namespace) or started again by hand gets its replicas back and our marks cleared."""

from __future__ import annotations

from typing import Protocol

from guardian.engine.remediation.guards import exclusion_requested, restarted_by_hand
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import ClusterSnapshot, PlannedAction, Wait
from guardian.model.remediation_events import LadderStep


class Sink(Protocol):
    """Where the planner collects a cycle's steps and waits."""

    actions: list[PlannedAction]
    waits: list[Wait]
    kill_switch: bool

    @property
    def dry_run(self) -> bool: ...


def restores(snapshot: ClusterSnapshot, now: float, out: Sink) -> None:
    """Each reclaimed workload of ``snapshot`` that should be restored, as a step in
    ``out`` (a wait while the kill switch is on)."""
    for ref, ws in sorted(snapshot.workloads.items(), key=lambda kv: str(kv[0])):
        if Annotations.RECLAIMED_AT not in ws.annotations:
            continue
        why = exclusion_requested(ws, snapshot.namespaces.get(ref.namespace), now)
        if why is None:
            why = restarted_by_hand(ws)
        if why is None:
            continue
        if out.kill_switch:
            out.waits.append(Wait(ref, "kill switch is on: not restoring"))
            continue
        out.actions.append(
            PlannedAction(
                workload=ref,
                step=LadderStep.RESTORE,
                policy=ws.annotations.get(Annotations.RECLAIMED_BY, ""),
                episode=ws.annotations.get(Annotations.EPISODE, ""),
                reason=f"restore: {why}",
                dry_run=out.dry_run,
                alert_labels=LabelSet(),
            )
        )
