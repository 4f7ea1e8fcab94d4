"""The simulation's answer as text for a terminal, and as JSON for scripts."""

from __future__ import annotations

from typing import Any

from guardian.app.simulate.simulation import SimulationResult
from guardian.engine.simulate.partial_outcomes import PartlyIdle
from guardian.engine.simulate.reclaim_outcomes import Freed, HoldSpan, ReclaimOutcome
from guardian.model.remediation_events import LadderStep
from guardian.model.times import rfc3339
from guardian_common.durations import format_duration
from guardian_common.words import amount, plural


def _money(cost: float | None, currency: str) -> str:
    """Cents, but a cost under a cent in two significant digits (``$0.0036``): a short
    replay's saving is small, and ``$0.00`` reads as none (and scales as none)."""
    if cost is None:
        return "n/a (no price)"
    if 0 < abs(cost) < 0.005:
        return f"{currency}{amount(cost)}"
    return f"{currency}{cost:,.2f}"


def _sum_cost(freed: list[Freed]) -> float | None:
    costs = [f.cost for f in freed]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _total_cost(result: SimulationResult) -> float | None:
    return _sum_cost([r.freed for r in result.reclaims])


def _right_size_cost(result: SimulationResult) -> float | None:
    return _sum_cost([p.freed for p in result.partly_idle])


def _hold_line(span: HoldSpan) -> str:
    where = str(span.workload) if span.workload else f"cluster {span.cluster or '(unnamed)'}"
    return (
        f"  {rfc3339(span.start)} to {rfc3339(span.end)} ({plural(span.cycles, 'cycle')}) "
        f"{where}: {span.reason}"
    )


def _reclaim_line(r: ReclaimOutcome, currency: str, horizon: float) -> str:
    s = r.step
    back = (
        f"busy again at {rfc3339(r.restored_at)}"
        + (f" (within {format_duration(horizon)}: REGRET)" if r.regret else "")
        if r.restored_at is not None
        else "not busy again in the range"
    )
    return (
        f"  {rfc3339(s.at)} {s.workload} (policy {s.policy}, {s.alert_labels.get('alertname')}): "
        f"frees {amount(r.freed.gpu_hours)} GPU-hours, {_money(r.freed.cost, currency)}; {back}\n"
        f"      {s.reason}"
    )


def _partly_line(p: PartlyIdle, currency: str) -> str:
    back = (
        "not busy again before it ended"
        if p.busy_again is None
        else f"its idle part busy again at {rfc3339(p.busy_again)}"
    )
    run = p.run
    return (
        f"  {rfc3339(run.at)} to {rfc3339(run.last)} ({plural(run.cycles, 'cycle')}) "
        f"{run.workload} (policy {run.policy}): a right-size frees "
        f"{amount(p.freed.gpu_hours)} GPU-hours, {_money(p.freed.cost, currency)}; {back}\n"
        f"      {run.reason}"
    )


def render_text(result: SimulationResult) -> str:
    span = result.span
    lines = [
        (
            f"simulated {rfc3339(span.start)} to {rfc3339(span.end)}: "
            f"{plural(result.groups, 'group')}, {plural(result.rules, 'rule')}, "
            f"{plural(result.queries, 'query', 'queries')}, {result.elapsed:.1f}s"
        ),
        f"metrics: {result.metrics}; {result.workloads_source}",
    ]
    if result.instant_rules:
        lines.append(
            "evaluated with one instant query per step (@ start()/end()): "
            + ", ".join(result.instant_rules)
        )
    modes = ", ".join(
        f"{name} ({mode} in {src or 'its file'})" for name, mode, src in result.policies
    )
    lines.append(f"policies, all replayed as enforcing: {modes or '(none)'}")
    fired = ", ".join(f"{name} x{n}" for name, n in sorted(result.fired.items()))
    lines.append(f"alerts fired: {fired or 'none'}")
    lines.append("")
    lines.append(f"would-be notifications: {len(result.notifications)}")
    lines.extend(
        f"  {rfc3339(s.at)} {s.workload} (policy {s.policy}): {s.reason}"
        for s in result.notifications
    )
    lines.append(f"would-be reclaims: {len(result.reclaims)}")
    lines.extend(_reclaim_line(r, result.currency, result.horizon) for r in result.reclaims)
    lines.append(f"partly idle, not reclaimed: {len(result.partly_idle)}")
    lines.extend(_partly_line(p, result.currency) for p in result.partly_idle)
    regret = sum(1 for r in result.reclaims if r.regret)
    hours = sum(r.freed.gpu_hours for r in result.reclaims)
    sized = sum(p.freed.gpu_hours for p in result.partly_idle)
    lines += [
        "",
        f"freed: {amount(hours)} GPU-hours, {_money(_total_cost(result), result.currency)}",
        (
            f"a right-size of the partly idle would have freed: {amount(sized)} GPU-hours, "
            f"{_money(_right_size_cost(result), result.currency)}"
        ),
        (
            f"regret: {regret} of {plural(len(result.reclaims), 'reclaim')} busy again within "
            f"{format_duration(result.horizon)}"
        ),
        f"pipeline health held every action: {plural(len(result.global_holds), 'time')}",
    ]
    lines.extend(_hold_line(s) for s in result.global_holds)
    lines.append(f"pipeline health held a workload's ladder: {plural(len(result.holds), 'time')}")
    lines.extend(_hold_line(s) for s in result.holds)
    lines.append(f"other guards said no: {plural(len(result.refusals), 'time')}")
    lines.extend(_hold_line(s) for s in result.refusals)
    return "\n".join(lines) + "\n"


def _step_json(s: Any) -> dict[str, Any]:
    return {
        "at": rfc3339(s.at),
        "workload": str(s.workload),
        "step": s.step.value,
        "policy": s.policy,
        "episode": s.episode,
        "alert": dict(s.alert_labels),
        "reason": s.reason,
    }


def _hold_json(span: HoldSpan) -> dict[str, Any]:
    return {
        "start": rfc3339(span.start),
        "end": rfc3339(span.end),
        "cycles": span.cycles,
        "workload": str(span.workload) if span.workload else None,
        "cluster": span.cluster,
        "reason": span.reason,
    }


def _partly_json(p: PartlyIdle) -> dict[str, Any]:
    first = p.run
    return {
        "start": rfc3339(first.at),
        "end": rfc3339(first.last),
        "cycles": first.cycles,
        "workload": str(first.workload),
        "policy": first.policy,
        "cluster": first.cluster,
        "reason": first.reason,
        "pods": len(first.pods),
        "idle_pods": first.idle_pods,
        "parts": [{"pod": part.pod, "idle": part.idle, "why": part.why} for part in first.pods],
        "idle_part": [
            {"pod": i.pod, "gpus": None if i.devices is None else sorted(i.devices)}
            for i in first.idle
        ],
        "busy_again_at": rfc3339(p.busy_again) if p.busy_again is not None else None,
        "right_size_gpu_hours": round(p.freed.gpu_hours, 6),
        "right_size_gpu_hours_by_model": {k: round(v, 6) for k, v in p.freed.by_model.items()},
        "right_size_cost": None if p.freed.cost is None else round(p.freed.cost, 6),
    }


def render_json(result: SimulationResult) -> dict[str, Any]:
    return {
        "since": rfc3339(result.span.start),
        "until": rfc3339(result.span.end),
        "metrics": result.metrics,
        "workloads_source": result.workloads_source,
        "instant_rules": list(result.instant_rules),
        "queries": result.queries,
        "policies": [
            {"name": n, "mode_in_file": m, "source": src} for n, m, src in result.policies
        ],
        "alerts_fired": dict(result.fired),
        "steps": [_step_json(s) for s in result.steps],
        "notifications": [_step_json(s) for s in result.notifications],
        "reclaims": [
            {
                **_step_json(r.step),
                "busy_again_at": rfc3339(r.restored_at) if r.restored_at is not None else None,
                "regret": r.regret,
                "freed_gpu_hours": round(r.freed.gpu_hours, 6),
                "freed_gpu_hours_by_model": {k: round(v, 6) for k, v in r.freed.by_model.items()},
                "cost": None if r.freed.cost is None else round(r.freed.cost, 6),
                "removed_pods": list(r.step.removed),
            }
            for r in result.reclaims
        ],
        "partly_idle": [_partly_json(p) for p in result.partly_idle],
        "totals": {
            "notifications": len(result.notifications),
            "reclaims": len(result.reclaims),
            "regret": sum(1 for r in result.reclaims if r.regret),
            "freed_gpu_hours": round(sum(r.freed.gpu_hours for r in result.reclaims), 6),
            "cost": _total_cost(result),
            "currency": result.currency,
            "horizon_seconds": result.horizon,
            "partly_idle": len(result.partly_idle),
            "right_size_gpu_hours": round(sum(p.freed.gpu_hours for p in result.partly_idle), 6),
            "right_size_cost": _right_size_cost(result),
        },
        "held_everything": [_hold_json(s) for s in result.global_holds],
        "held_workloads": [_hold_json(s) for s in result.holds],
        "refused": [_hold_json(s) for s in result.refusals],
        "restores": [{"at": rfc3339(at), "workload": ref} for at, ref in result.restores],
        "steps_by_kind": {
            step.value: sum(1 for s in result.steps if s.step is step) for step in LadderStep
        },
    }
