"""Findings used by the renderer and planner tests."""

from __future__ import annotations

import dataclasses

from guardian.engine.notify.findings import (
    AlertFacts,
    FindingRules,
    PriceTable,
    new_finding,
    with_cost,
)
from guardian.engine.notify.state import NotifyPlan, NotifyState
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, OwnerContext, Phase
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef

T0 = 1_764_000_000.0  # 2025-11-24 16:00 UTC
RULES = FindingRules(prices=PriceTable({"A100": 4.1, "H100": 9.5}, default=2.0))
LABELS = LabelSet(
    {
        "alertname": "GpuIdle",
        "severity": "warning",
        "cluster": "prod-eu",
        "namespace": "ml-research",
        "pod": "train-llm-7f9c-0",
        "node": "gpu-node-12",
        "gpu_group": "a100-80g",
        "gpu_model": "NVIDIA A100-SXM4-80GB",
        "uuid": "GPU-1234",
        "guardian_class": "reclaimable",
    }
)
ANNOTATIONS = LabelSet(
    {
        "summary": "An allocated GPU has been idle for the whole idle window.",
        "runbook_url": "https://gpu-guardian.io/runbooks/gpuidle",
        "memory_used_bytes": str(3 * 2**30),
        "memory_total_bytes": str(80 * 2**30),
    }
)
WORKLOAD = WorkloadRef("apps/v1", "Deployment", "ml-research", "train-llm")
CONTEXT = OwnerContext(
    workload=WORKLOAD,
    namespace_annotations=LabelSet({"gpu-guardian.io/slack-mention": "S0MLTEAM"}),
    workload_annotations=LabelSet({"gpu-guardian.io/slack-mention": "U0ALICE, @here"}),
)


def firing(now: float = T0 + 3600) -> Finding:
    """Active since T0 (30m idle window before it), seen at T0 + 1h."""
    return new_finding(AlertFacts(LABELS, ANNOTATIONS, 0.012, T0), now, RULES, CONTEXT)


SHARE_LABELS = LabelSet(
    {
        **LABELS,
        "alertname": "GpuShareIdle",
        "pod": "notebook-bob-5d8f-0",
        "model": "NVIDIA A100-SXM4-80GB",
    }
)
SHARE_ANNOTATIONS = LabelSet(
    {
        "summary": "A pod's share of a shared GPU has been idle for the whole idle window.",
        "runbook_url": "https://gpu-guardian.io/runbooks/gpushareidle",
        "share": "0.25",
        "idle_window": "30m",
    }
)
MEMORY_LABELS = LabelSet({**LABELS, "alertname": "GpuMemoryUnderutilized", "severity": "info"})
MEMORY_ANNOTATIONS = LabelSet(
    {
        "summary": "An allocated GPU has used little of its memory for the whole window.",
        "runbook_url": "https://gpu-guardian.io/runbooks/gpumemoryunderutilized",
        "advice": "MIG 2g.20gb or a 1/4 time-slice share would have held its peaks "
        "(10% of the memory, 25% SM use).",
    }
)


def shared() -> Finding:
    """A pod idle on its quarter of a time-sliced GPU."""
    return new_finding(
        AlertFacts(SHARE_LABELS, SHARE_ANNOTATIONS, 0.25, T0), T0 + 3600, RULES, CONTEXT
    )


def underused_memory() -> Finding:
    """A memory alert with right-sizing advice (value: the peak memory ratio)."""
    return new_finding(
        AlertFacts(MEMORY_LABELS, MEMORY_ANNOTATIONS, 0.1, T0), T0 + 3600, RULES, CONTEXT
    )


# The ladder's (workload) episode a policy opened for the alert: the id people read.
LADDER_EPISODE = "4b1c0e5f9a7d2c83"


def grace() -> Finding:
    return firing().with_changes(
        ladder_episode=LADDER_EPISODE,
        phase=Phase.GRACE,
        policy="reclaim-idle-research",
        last_outcome=StepOutcome.APPLIED,
        next_step=LadderStep.RECLAIM,
        next_step_due=T0 + 7200,
        updated_at=T0 + 3600,
    )


def reclaimed() -> Finding:
    return _priced(
        grace().with_changes(
            phase=Phase.RECLAIMED,
            next_step=LadderStep.RESTORE,
            next_step_due=None,
            reclaimed_at=T0 + 7200,
            restore_command="guardian restore ml-research/Deployment/train-llm",
            updated_at=T0 + 7200,
        )
    )


def _priced(f: Finding) -> Finding:
    return with_cost(f, f.updated_at, RULES.prices)


def written(state: NotifyState, plan: NotifyPlan) -> NotifyState:
    """The state after the plan's write, as the next intake would gather it."""
    return dataclasses.replace(
        state,
        episodes={**state.episodes, **{r.episode: r for r in plan.episodes}},
        threads={**state.threads, **{t.key: t for t in plan.threads}},
        seen=state.seen | set(plan.seen),
        aliases={**state.aliases, **dict(plan.aliases)},
        owners={},
    )
