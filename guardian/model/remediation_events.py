"""What the remediation ladder did or plans to do, as neutral events for notifiers and status.

This is the contract between the remediation executor (which produces these
events) and the notifiers (Slack), which render them. No Kubernetes or Slack
types appear here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from guardian.model.labels import LabelSet


class LadderStep(StrEnum):
    """The escalation ladder, in order. A step never runs before the ones above it."""

    NOTIFY = "notify"
    ANNOTATE = "annotate"
    GRACE = "grace"  # waiting out the grace period after the warning
    CHECKPOINT = "checkpoint"  # reclaim-requested-at set: the workload may save its state
    RECLAIM = "reclaim"  # scale to 0, suspend, or stop the notebook
    RESTORE = "restore"


class StepOutcome(StrEnum):
    PLANNED = "planned"  # decided, not applied yet (or waiting for its due time)
    APPLIED = "applied"
    DRY_RUN = "dry-run"  # observe mode or dry-run: logged and recorded, nothing changed
    REFUSED = "refused"  # a guard said no (exclusion, unhealthy pipeline, HPA policy, ...)
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """The object the ladder acts on: the owner at the root of the pod's owner chain."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


def episode_id(alert_labels: LabelSet, active_at: float) -> str:
    """A stable ID for one alert episode: the same alert returning later is a new episode."""
    digest = hashlib.sha256()
    for name, value in alert_labels.items():
        digest.update(f"{name}\x00{value}\x00".encode())
    digest.update(f"{active_at:.3f}".encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RemediationEvent:
    """One step of one episode on one workload, with everything a notifier shows."""

    episode: str
    workload: WorkloadRef
    step: LadderStep
    outcome: StepOutcome
    at: float  # unix seconds
    policy: str
    reason: str
    alert_labels: LabelSet
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    original_replicas: int | None = None
    restore_command: str | None = None  # e.g. "guardian restore ml/Deployment/train"
    seq: int | None = None  # the ledger's sequence number (a notifier's durable cursor)
