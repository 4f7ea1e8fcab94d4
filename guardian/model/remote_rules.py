"""Alerting rules as a Prometheus or Thanos Ruler reports them (``GET /api/v1/rules``):
pure data for ``alerts.source: prometheus``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from guardian.model.alerts import AlertState
from guardian.model.labels import LabelSet


@dataclass(frozen=True, slots=True)
class RemoteAlert:
    """One pending or firing alert of a remote rule."""

    labels: LabelSet
    annotations: LabelSet
    state: AlertState
    active_at: float
    value: float


@dataclass(frozen=True)
class RemoteRule:
    """One alerting rule: its raw labels, health and last evaluation (unix seconds; None
    when it has never been evaluated)."""

    name: str
    query: str
    duration: float
    labels: Mapping[str, str] = field(default_factory=dict)
    health: str = "unknown"  # ok, err, unknown
    last_error: str = ""
    last_evaluation: float | None = None
    alerts: tuple[RemoteAlert, ...] = ()


@dataclass(frozen=True)
class RemoteGroup:
    name: str
    file: str
    interval: float
    rules: tuple[RemoteRule, ...]
