"""``guardian explain``: why one workload was (or was not) acted on, in the planner's words.

The running controller reads the workload and its pods again, takes the engine's alerts
about those pods, and plans that workload alone exactly as its cycle does; the answer
is the plan's trace for it (every gate asked, in order, with its answer), its outcome,
the episode as the shared state keeps it, and the workload's ledger history. With
``at``, only the history up to then and the decision recorded last before it: what
was decided at that time, from the ledger, not planned again.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from guardian.adapters.ledger import Ledger
from guardian.app.remediation.restore import parse_target
from guardian.engine.remediation import Cycle, plan
from guardian.engine.remediation.guards import is_pipeline
from guardian.model.reclaim import FiringAlert, Plan, PlannedAction, Wait, WorkloadState
from guardian.model.remediation_events import RemediationEvent, WorkloadRef
from guardian.model.times import rfc3339
from guardian_common.errors import ConfigError

if TYPE_CHECKING:
    from guardian.app.remediation.loop import RemediationLoop

HISTORY = 50  # the ledger events shown, newest last


def _pods(ws: WorkloadState) -> list[dict[str, Any]]:
    return [
        {
            "name": m.name,
            "phase": m.phase,
            "ready": m.ready,
            "node": m.node,
            "gpus": dict(m.gpus),
            "created": rfc3339(m.created_at),
            "terminating": m.deleting,
        }
        for m in ws.members or ()
    ]


def _alerts(alerts: list[FiringAlert]) -> list[dict[str, Any]]:
    return [
        {
            "alertname": a.alertname,
            "state": "firing" if a.firing else "pending",
            "pod": a.labels.get("pod", ""),
            "node": a.labels.get("node", ""),
            "gpu": a.labels.get("uuid") or a.labels.get("UUID") or a.labels.get("gpu", ""),
            "value": a.value,
            "active_at": rfc3339(a.active_at),
        }
        for a in alerts
    ]


def _outcome(result: Plan, ref: WorkloadRef) -> dict[str, Any]:
    found: PlannedAction | Wait | None = next(
        (a for a in result.actions if a.workload == ref), None
    ) or next((w for w in result.waits if w.workload == ref), None)
    if found is None:
        return {"decision": "nothing to decide: no alert of a policy's is about its pods"}
    due = found.next_step_due
    out: dict[str, Any] = {
        "reason": found.reason,
        "next_step": found.next_step.value if found.next_step else None,
        "due": rfc3339(due) if due else None,
    }
    if isinstance(found, PlannedAction):
        verb = "would " if found.dry_run else ""
        return {"decision": f"{verb}{found.step.value}", "policy": found.policy, **out}
    kind = "refused" if found.refused else "waits"
    return {"decision": kind, "waiting_for": found.kind.value, "policy": found.policy, **out}


def _event(e: RemediationEvent) -> dict[str, Any]:
    return {
        "at": rfc3339(e.at),
        "episode": e.episode,
        "step": e.step.value,
        "outcome": e.outcome.value,
        "reason": e.reason,
    }


def _history(ledger: Ledger, ref: WorkloadRef, at: float | None) -> list[dict[str, Any]]:
    events = ledger.workload_events(ref.namespace, ref.kind, ref.name)
    return [_event(e) for e in events if at is None or e.at <= at][-HISTORY:]


def history_answer(ledger: Ledger, target: str, at: float) -> dict[str, Any]:
    """What was decided about ``target`` last before ``at``, from one state database."""
    parts = target.split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigError(f"expected NAMESPACE/KIND/NAME, got {target!r}", field="workload")
    ref = WorkloadRef("", parts[1], parts[0], parts[2])
    history = _history(ledger, ref, at)
    last = history[-1] if history else None
    return {"workload": target, "at": rfc3339(at), "decision": last, "history": history}


def _episode(loop: RemediationLoop, ref: WorkloadRef) -> dict[str, Any] | None:
    if loop.journal is None:
        return None
    live = [e for e in loop.journal.episodes() if e.workload == ref and e.live]
    if not live:
        return None
    e = live[-1]
    return {
        "id": e.episode,
        "state": e.state.value,
        "policy": e.policy,
        "started_at": rfc3339(e.started_at),
        "steps": [
            {"step": m.step.value, "outcome": m.outcome.value, "at": rfc3339(m.at), "by": m.by}
            for m in e.steps
        ],
        "next_step": e.next_step.value if e.next_step else None,
        "due": rfc3339(e.next_step_due) if e.next_step_due else None,
        "waiting_for": e.hold.value if e.hold else None,
    }


def explain(
    loop: RemediationLoop, target: str, now: float, at: float | None = None
) -> dict[str, Any]:
    """The answer for ``target`` (NAMESPACE/KIND/NAME, KIND as kubectl takes it): planned
    now, or with ``at`` recorded before then."""
    ref = parse_target(target, loop.reader)
    if at is not None:
        return history_answer(loop.ledger, str(ref), at)
    history = _history(loop.ledger, ref, None)
    ws = loop.reader.with_members(loop.reader.workload(ref))
    names = {m.name for m in ws.members or ()} | set(ws.pods)
    alerts = loop.current_alerts()
    mine = [
        a
        for a in alerts
        if a.labels.get("namespace") == ref.namespace and a.labels.get("pod") in names
    ]
    pods = sorted((ref.namespace, a.labels.get("pod", "")) for a in mine)
    snapshot = loop.reader.snapshot(pods, [ref], loop.controller_namespace)
    snapshot = dataclasses.replace(snapshot, workloads={**snapshot.workloads, ref: ws})
    pipeline = [a for a in alerts if is_pipeline(a.labels)]
    cycle = Cycle(mine + pipeline, snapshot, loop.journal_view(now), now, loop.health, loop.held)
    result = plan(cycle, loop.policies, loop.planner)
    checks = result.checks.get(ref, ())
    return {
        "workload": str(ref),
        "now": rfc3339(now),
        "pods": _pods(ws),
        "alerts": _alerts(mine),
        "checks": [{"gate": c.gate, "passed": c.passed, "detail": c.detail} for c in checks],
        "outcome": _outcome(result, ref),
        "episode": _episode(loop, ref),
        "history": history,
    }


def render(answer: dict[str, Any]) -> str:
    """The answer as text, for a person."""
    out = [f"{answer['workload']}" + (f" at {answer['at']}" if "at" in answer else "")]
    if "at" in answer:
        last = answer.get("decision")
        out.append(
            f"  decided: {last['step']} {last['outcome']}: {last['reason']}"
            if last
            else "  nothing recorded before then"
        )
    else:
        out.append("Pods:")
        out += [
            f"  {p['name']:<40} {p['phase']:<9} node {p['node'] or '-':<12} gpus {p['gpus']}"
            for p in answer["pods"]
        ]
        out.append("Alerts about them:")
        out += [
            f"  {a['state']:<8} {a['alertname']:<22} {a['pod']:<36} {a['gpu']:<14} "
            f"value {a['value']:g} since {a['active_at']}"
            for a in answer["alerts"]
        ]
        out.append("Gates, in the planner's order:")
        out += [
            f"  {'ok ' if c['passed'] else 'NO '} {c['gate']:<16} {c['detail']}"
            for c in answer["checks"]
        ]
        o = answer["outcome"]
        out.append(f"Decision: {o['decision']}" + (f": {o['reason']}" if o.get("reason") else ""))
        if o.get("next_step"):
            out.append(f"  next: {o['next_step']}" + (f" at {o['due']}" if o.get("due") else ""))
    out.append("History (ledger):")
    out += [f"  {h['at']} {h['step']} {h['outcome']}: {h['reason']}" for h in answer["history"]]
    return "\n".join(out)
