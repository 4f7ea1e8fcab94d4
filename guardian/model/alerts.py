"""Alert model: pure data shared by the rule engine and its outputs."""

from __future__ import annotations

from enum import StrEnum


class AlertState(StrEnum):
    """An alert's state, with Prometheus's names (rules/alerting.go)."""

    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
