"""The neutral notification model: one finding per alert episode, as the notifiers show it.

A ``Finding`` folds an episode's alert transitions (firing, resolved) and remediation
events (grace, reclaimed, restored) into what a person needs to read. Notifiers render
it; no Slack type appears here. Everything is plain data, serialisable with
``finding_to_dict`` / ``finding_from_dict`` so the outbox can keep it durably.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from guardian.model.labels import EMPTY_LABELS, LabelSet
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef

MENTION_ANNOTATION = "gpu-guardian.io/slack-mention"


class Phase(StrEnum):
    """Where an episode stands; the parent message's headline."""

    FIRING = "firing"
    GRACE = "grace"
    RECLAIMED = "reclaimed"
    RESTORED = "restored"
    RESOLVED = "resolved"


# Phases after which nothing is wasted any more: no reminders.
QUIET_PHASES = frozenset({Phase.RECLAIMED, Phase.RESTORED, Phase.RESOLVED})


@dataclass(frozen=True, slots=True)
class OwnerContext:
    """What the cluster snapshot knows about an alert's owner.

    The remediation executor (or whatever holds the cluster snapshot) supplies it for an
    alert's labels: the workload at the root of the pod's owner chain and the annotations
    of that workload and its namespace (mentions come from ``MENTION_ANNOTATION``).
    """

    workload: WorkloadRef | None = None
    workload_annotations: LabelSet = EMPTY_LABELS
    namespace_annotations: LabelSet = EMPTY_LABELS
    gpu_model: str | None = None

    @property
    def mention(self) -> str | None:
        """The workload's annotation wins over the namespace's."""
        for source in (self.workload_annotations, self.namespace_annotations):
            value = source.get(MENTION_ANNOTATION, "").strip()
            if value:
                return value
        return None


@dataclass(frozen=True, slots=True)
class UsageEvidence:
    """The numbers behind a finding. ``None`` means the alert did not say."""

    peak_utilization: float | None = None  # ratio 0-1, busiest point in the window
    peak_memory_ratio: float | None = None  # used / total, busiest point in the window
    memory_used_bytes: float | None = None
    memory_total_bytes: float | None = None
    idle_since: float | None = None  # unix seconds: start of the idle window
    share: float | None = None  # the part of the GPU the pod holds (0-1]; None: all of it


@dataclass(frozen=True, slots=True)
class Cost:
    per_hour: float  # for every GPU the finding covers
    waste_so_far: float  # since ``idle_since`` until now, or until reclaimed
    currency: str = "$"


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of an episode's history: a thread reply."""

    at: float
    phase: Phase
    text: str
    mentions: tuple[str, ...] = ()  # as written in the annotation; the notifier formats them
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    actor: str | None = None  # the Slack user whose button caused it (shown as a mention)


@dataclass(frozen=True, slots=True)
class Finding:
    """One alert episode as the on-call engineer reads it."""

    episode: str
    alertname: str
    severity: str
    phase: Phase
    labels: LabelSet
    active_at: float
    updated_at: float
    summary: str = ""
    description: str = ""
    runbook_url: str | None = None
    cluster: str | None = None
    namespace: str | None = None
    pod: str | None = None
    node: str | None = None
    gpu_group: str | None = None
    gpu_model: str | None = None
    gpus: int = 1
    workload: WorkloadRef | None = None
    evidence: UsageEvidence = field(default_factory=UsageEvidence)
    cost: Cost | None = None
    policy: str | None = None
    reason: str | None = None
    last_outcome: StepOutcome | None = None
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    restore_command: str | None = None
    reclaimed_at: float | None = None
    resolved_at: float | None = None
    mentions: tuple[str, ...] = ()
    evaluation_note: str | None = None  # set when the deciding evaluation was not healthy
    advice: str | None = None  # right-sizing advice from the alert's ``advice`` annotation
    kept_until: float | None = None  # snoozed from Slack until then
    kept_by: str | None = None  # the Slack user who pressed Keep
    exempted_by: str | None = None  # the Slack user who pressed Exempt
    # The ladder's (workload) episode once a ladder step belongs to this alert: the id a
    # person reads (annotations, Events, ledger, status). ``episode`` stays the key.
    ladder_episode: str | None = None

    @property
    def open(self) -> bool:
        """Still wasting: reminders apply."""
        return self.phase not in QUIET_PHASES and self.resolved_at is None

    def with_changes(self, **changes: Any) -> Finding:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """Many findings of one rule in one namespace, shown as one message."""

    key: str
    alertname: str
    namespace: str
    severity: str
    findings: tuple[Finding, ...]
    updated_at: float

    def count(self, phase: Phase) -> int:
        return sum(1 for f in self.findings if f.phase is phase)


# ------------------------------------------------------------------ serialisation
def _workload_dict(w: WorkloadRef | None) -> dict[str, str] | None:
    if w is None:
        return None
    return {"api_version": w.api_version, "kind": w.kind, "namespace": w.namespace, "name": w.name}


def _workload(d: Mapping[str, str] | None) -> WorkloadRef | None:
    return (
        None if d is None else WorkloadRef(d["api_version"], d["kind"], d["namespace"], d["name"])
    )


def finding_to_dict(f: Finding) -> dict[str, Any]:
    e, c = f.evidence, f.cost
    return {
        "episode": f.episode,
        "alertname": f.alertname,
        "severity": f.severity,
        "phase": f.phase.value,
        "labels": dict(f.labels.items_sorted),
        "active_at": f.active_at,
        "updated_at": f.updated_at,
        "summary": f.summary,
        "description": f.description,
        "runbook_url": f.runbook_url,
        "cluster": f.cluster,
        "namespace": f.namespace,
        "pod": f.pod,
        "node": f.node,
        "gpu_group": f.gpu_group,
        "gpu_model": f.gpu_model,
        "gpus": f.gpus,
        "workload": _workload_dict(f.workload),
        "evidence": {
            "peak_utilization": e.peak_utilization,
            "peak_memory_ratio": e.peak_memory_ratio,
            "memory_used_bytes": e.memory_used_bytes,
            "memory_total_bytes": e.memory_total_bytes,
            "idle_since": e.idle_since,
            "share": e.share,
        },
        "cost": None
        if c is None
        else {"per_hour": c.per_hour, "waste_so_far": c.waste_so_far, "currency": c.currency},
        "policy": f.policy,
        "reason": f.reason,
        "last_outcome": None if f.last_outcome is None else f.last_outcome.value,
        "next_step": None if f.next_step is None else f.next_step.value,
        "next_step_due": f.next_step_due,
        "restore_command": f.restore_command,
        "reclaimed_at": f.reclaimed_at,
        "resolved_at": f.resolved_at,
        "mentions": list(f.mentions),
        "evaluation_note": f.evaluation_note,
        "advice": f.advice,
        "kept_until": f.kept_until,
        "kept_by": f.kept_by,
        "exempted_by": f.exempted_by,
        "ladder_episode": f.ladder_episode,
    }


def finding_from_dict(d: Mapping[str, Any]) -> Finding:
    cost = d.get("cost")
    return Finding(
        episode=d["episode"],
        alertname=d["alertname"],
        severity=d["severity"],
        phase=Phase(d["phase"]),
        labels=LabelSet(d["labels"]),
        active_at=d["active_at"],
        updated_at=d["updated_at"],
        summary=d["summary"],
        description=d["description"],
        runbook_url=d["runbook_url"],
        cluster=d["cluster"],
        namespace=d["namespace"],
        pod=d["pod"],
        node=d["node"],
        gpu_group=d["gpu_group"],
        gpu_model=d["gpu_model"],
        gpus=d["gpus"],
        workload=_workload(d["workload"]),
        evidence=UsageEvidence(**d["evidence"]),
        cost=None if cost is None else Cost(**cost),
        policy=d["policy"],
        reason=d["reason"],
        last_outcome=None if d["last_outcome"] is None else StepOutcome(d["last_outcome"]),
        next_step=None if d["next_step"] is None else LadderStep(d["next_step"]),
        next_step_due=d["next_step_due"],
        restore_command=d["restore_command"],
        reclaimed_at=d["reclaimed_at"],
        resolved_at=d["resolved_at"],
        mentions=tuple(d["mentions"]),
        evaluation_note=d.get("evaluation_note"),
        advice=d.get("advice"),
        kept_until=d.get("kept_until"),
        kept_by=d.get("kept_by"),
        exempted_by=d.get("exempted_by"),
        ladder_episode=d.get("ladder_episode"),
    )
