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
    # Not rungs of the ladder: what happened to the episode between them.
    GIVE_UP = "give-up"  # the checkpoint was never acknowledged (onTimeout: giveUp)
    HOLD = "hold"  # no evidence can be read: the episode is held exactly as it is
    RESUME = "resume"  # the evidence is back after a hold


class StepOutcome(StrEnum):
    PLANNED = "planned"  # decided, not applied yet (or waiting for its due time)
    APPLIED = "applied"
    DRY_RUN = "dry-run"  # observe mode or dry-run: logged and recorded, nothing changed
    REFUSED = "refused"  # a guard said no (exclusion, unhealthy pipeline, HPA policy, ...)
    FAILED = "failed"


class HoldKind(StrEnum):
    """What a workload the planner did not act on waits for: status says it this way."""

    GRACE = "grace"  # the grace period; due: the reclaim's time
    WINDOW = "window"  # the policy's active windows; due: the next opening
    DEMAND = "demand"  # a Pending pod that could use its GPUs; no due time
    CHECKPOINT = "checkpoint"  # the workload's acknowledgement; due: the deadline
    GAVE_UP = "gave-up"  # no acknowledgement: the ladder stopped (a late one still counts)
    EVIDENCE = "evidence"  # the alerts do not cover the whole workload (partly idle, new pods)
    OUTAGE = "outage"  # the alerts cannot be seen now: the episode is held as it is
    RESUMING = "resuming"  # the evidence is back; proving it again before a reclaim
    GUARD = "guard"  # a guard said no: exclusion, pipeline health, silence, limits, ...
    STEP = "step"  # nothing to wait for now (one step per cycle, ladder done, ...)


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
    hold: HoldKind | None = None  # a recorded wait: what it waits for
