"""The ``status`` of a ClusterReclaimPolicy or ReclaimPolicy object, from one cycle's plan.

Pure: what the controller knows about the object (its generation, the findings that
make it invalid, the generation in force) and the cycle's plan in, the status out.
The candidates are the preview an admin reads before switching to enforce: "would
reclaim ml/Deployment/x at T because ...".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardian.model.policies import Annotations
from guardian.model.reclaim import ClusterSnapshot, Plan
from guardian.model.remediation_events import HoldKind
from guardian.model.times import rfc3339

MAX_CANDIDATES = 20
# The waits a preview shows: what the controller waits for before a step, or why it
# stopped (refusals by a guard, one step per cycle and the like are not previews).
PREVIEWED = frozenset(
    {
        HoldKind.GRACE,
        HoldKind.WINDOW,
        HoldKind.DEMAND,
        HoldKind.CHECKPOINT,
        HoldKind.GAVE_UP,
        HoldKind.OUTAGE,
        HoldKind.RESUMING,
        HoldKind.EVIDENCE,
    }
)
Finding = tuple[str, str]  # (field path, reason)


@dataclass(frozen=True)
class ObjectView:
    """What the controller knows about one policy object."""

    identity: str  # the policy's name in the ledger: "name" or "namespace/name"
    generation: int
    in_force: int | None  # the generation that acts (None: none ever valid)
    invalid: Sequence[Finding] = ()  # why this generation is invalid (schema, model)
    rejected: Sequence[Finding] = ()  # why a team's policy has no effect (delegation)
    note: str = ""  # in force but acting on nothing, and why (optIn and no team opts in)


def _condition(kind: str, true: bool, reason: str, message: str, generation: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if true else "False",
        "reason": reason,
        "message": message[:1024],
        "observedGeneration": generation,
    }


def _text(findings: Sequence[Finding]) -> str:
    return "; ".join(f"{field}: {why}" if field else why for field, why in findings)


def conditions(view: ObjectView) -> list[dict[str, Any]]:
    gen = view.generation
    if view.invalid:
        kept = (
            f"generation {view.in_force} stays in force"
            if view.in_force is not None
            else "no generation is in force"
        )
        text = _text(view.invalid)
        return [
            _condition(
                "Ready", False, "Invalid", f"generation {gen} is invalid ({text}); {kept}", gen
            ),
            _condition("Invalid", True, "FieldValueInvalid", text, gen),
        ]
    if view.rejected:
        text = _text(view.rejected)
        return [
            _condition("Ready", False, "DelegationRejected", f"no effect: {text}", gen),
            _condition("Invalid", True, "DelegationRejected", text, gen),
        ]
    return [
        _condition(
            "Ready",
            True,
            "Valid",
            f"generation {gen} is in force" + (f"; {view.note}" if view.note else ""),
            gen,
        ),
        _condition("Invalid", False, "Valid", "", gen),
    ]


def _would(dry_run: bool, step: str) -> str:
    return f"would {step}" if dry_run else step


def candidates(identity: str, plan: Plan) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for action in plan.actions:
        if action.policy != identity:
            continue
        ref = str(action.workload)
        out.append(
            {
                "workload": ref,
                "action": _would(action.dry_run, action.step.value),
                "at": rfc3339(plan.now),
                "reason": action.reason,
            }
        )
        if action.next_step is not None and action.next_step_due is not None:
            out.append(
                {
                    "workload": ref,
                    "action": _would(action.dry_run, action.next_step.value),
                    "at": rfc3339(action.next_step_due),
                    "reason": f"after {action.step.value}: {action.reason}",
                }
            )
    out.extend(
        {
            "workload": str(wait.workload),
            "action": "gave up"
            if wait.kind is HoldKind.GAVE_UP
            else f"next: {wait.next_step.value}"
            if wait.next_step is not None
            else "held",
            "at": rfc3339(wait.next_step_due) if wait.next_step_due else "",
            "reason": wait.reason,
            "waitingFor": wait.kind.value,
        }
        for wait in plan.waits
        if wait.policy == identity and wait.workload is not None and wait.kind in PREVIEWED
    )
    return out[:MAX_CANDIDATES]


def build_status(
    view: ObjectView,
    plan: Plan | None,
    snapshot: ClusterSnapshot | None,
    previous: Mapping[str, Any],
) -> dict[str, Any]:
    """The status to write; ``previous`` (the object's status now) keeps the last action
    and each condition's lastTransitionTime while its status does not change."""
    status: dict[str, Any] = {"observedGeneration": view.generation}
    old = {c.get("type"): c for c in previous.get("conditions") or [] if isinstance(c, dict)}
    now = rfc3339(plan.now) if plan is not None else ""
    conds = conditions(view)
    for cond in conds:
        before = old.get(cond["type"])
        same = before is not None and before.get("status") == cond["status"]
        cond["lastTransitionTime"] = (
            str(before.get("lastTransitionTime")) if same and before else now
        )
    status["conditions"] = conds
    identity = view.identity if view.in_force is not None and not view.rejected else None
    if plan is None or identity is None:
        status.update(matchedWorkloads=0, pendingSteps=0, reclaimed=0, candidates=[])
    else:
        mine = [a for a in plan.actions if a.policy == identity]
        waits = [w for w in plan.waits if w.policy == identity and w.workload is not None]
        status["matchedWorkloads"] = len({a.workload for a in mine} | {w.workload for w in waits})
        status["pendingSteps"] = len(mine) + sum(1 for w in waits if w.next_step is not None)
        reclaimed = snapshot.workloads.values() if snapshot is not None else ()
        status["reclaimed"] = sum(
            1 for ws in reclaimed if ws.annotations.get(Annotations.RECLAIMED_BY) == identity
        )
        status["candidates"] = candidates(identity, plan)
        if mine:
            last = mine[-1]
            status["lastAction"] = f"{_would(last.dry_run, last.step.value)} {last.workload}"
            status["lastActionTime"] = now
    for key in ("lastAction", "lastActionTime"):
        if key not in status and previous.get(key):
            status[key] = previous[key]
    return status
