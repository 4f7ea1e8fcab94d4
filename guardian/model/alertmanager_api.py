"""Alertmanager API v2 objects as pure data (Alertmanager v0.25.0, ``api/v2/openapi.yaml``):
the alerts we post, and what ``GET /api/v2/alerts`` and ``GET /api/v2/silences`` answer.

Times are unix seconds. The wire format (key order, RFC 3339 with milliseconds) is the
adapter's business (:mod:`guardian.adapters.alertmanager`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from guardian.model.labels import LabelSet


@dataclass(frozen=True, slots=True)
class PostableAlert:
    """One alert as Prometheus's notifier posts it (``models.PostableAlert``)."""

    labels: LabelSet
    annotations: LabelSet
    starts_at: float
    ends_at: float
    generator_url: str


class AlertStatus(StrEnum):
    """``status.state`` of a stored alert. SUPPRESSED covers silenced and inhibited."""

    UNPROCESSED = "unprocessed"
    ACTIVE = "active"
    SUPPRESSED = "suppressed"


@dataclass(frozen=True, slots=True)
class StoredAlert:
    """One alert as ``GET /api/v2/alerts`` lists it (``models.GettableAlert``)."""

    labels: LabelSet
    fingerprint: str
    state: AlertStatus
    silenced_by: tuple[str, ...] = ()
    inhibited_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Silence:
    """One silence (``models.GettableSilence``); ``state`` is active, pending or expired."""

    id: str
    created_by: str
    comment: str
    starts_at: float
    ends_at: float
    state: str


@dataclass(frozen=True)
class AlertmanagerView:
    """What one Alertmanager answered in one remediation cycle.

    ``silences`` holds the silences the listed alerts refer to (by id); it is empty when
    none is silenced, or when the silences could not be read (``silences_error``).
    """

    source: str  # the Alertmanager, as logged (no credentials)
    alerts: tuple[StoredAlert, ...]
    silences: Mapping[str, Silence] = field(default_factory=dict)
    silences_error: str = ""
