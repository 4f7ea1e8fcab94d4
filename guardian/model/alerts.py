"""Alert model: pure data shared by the rule engine and its outputs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from guardian.model.labels import LabelSet


class AlertState(StrEnum):
    """An alert's state, with Prometheus's names (rules/alerting.go)."""

    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"


class EvaluationHealth(StrEnum):
    """How much an evaluation's answer can be trusted. Only OK may be acted on."""

    OK = "ok"
    WARNINGS = "warnings"  # the query answered, with warnings: data may be incomplete
    PARTIAL = "partial"  # the query answered from only part of the stores (Thanos)
    FAILED = "failed"  # no usable answer: error, timeout, collision, limit

    @property
    def actionable(self) -> bool:
        return self is EvaluationHealth.OK


class TransitionKind(StrEnum):
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


@dataclass(frozen=True, slots=True)
class Alert:
    """One entry of an alerting rule's active map (Prometheus rules/alerting.go Alert).

    Times are unix seconds of evaluation timestamps (slots), never wall-clock reads.
    """

    labels: LabelSet
    annotations: LabelSet
    state: AlertState
    active_at: float
    value: float
    fired_at: float | None = None
    resolved_at: float | None = None
    keep_firing_since: float | None = None

    @property
    def is_active(self) -> bool:
        return self.state is not AlertState.INACTIVE


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a transition happened: the evaluation that produced it and how healthy it was."""

    health: EvaluationHealth
    eval_ts: float
    query: str
    warnings: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AlertTransition:
    """An alert changed state. ``kind`` is the new state; RESOLVED covers a pending alert
    that vanished (``previous`` = PENDING) as well as a firing one that ended.

    Consumers (remediation, Slack) must check ``evidence.health.actionable`` before
    acting; a transition caused by a failed evaluation (``limit`` exceeded clears the
    rule's alerts, as in Prometheus) carries FAILED health.
    """

    kind: TransitionKind
    previous: AlertState
    group: str
    rule: str
    labels: LabelSet
    annotations: LabelSet
    value: float
    active_at: float
    at: float
    evidence: Evidence
    fired_at: float | None = None
    resolved_at: float | None = None

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", self.rule)


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """The result of one alerting rule in one group evaluation."""

    rule: str
    health: EvaluationHealth
    error: str | None = None
    warnings: tuple[str, ...] = ()
    samples: int = 0
    duration_seconds: float = 0.0
    reason: str | None = None  # why not OK: timeout, connection, collision, limit, warnings...


@dataclass(frozen=True, slots=True)
class GroupEvaluation:
    """Everything one group evaluation produced: per-rule health and the transitions."""

    group: str
    file: str
    ts: float
    outcomes: tuple[RuleOutcome, ...]
    transitions: tuple[AlertTransition, ...]

    @property
    def healthy(self) -> bool:
        return all(o.health.actionable for o in self.outcomes)
