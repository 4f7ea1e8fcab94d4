"""For-state restoration after a restart, as ``Group.RestoreForState`` in Prometheus
2.42's rules/manager.go.

Prometheus rebuilds ``ActiveAt`` from ``ALERTS_FOR_STATE``; the engine reads it from its
own store, and applies the same three cases to pending alerts:

- the ``for`` already elapsed before the outage: keep ``ActiveAt`` (fires now);
- less than the grace period left: fire one grace period after the restart;
- otherwise: the outage does not count, push ``ActiveAt`` later by the downtime.

Rules whose ``for`` is below the grace period, and outages longer than the outage
tolerance, are not restored: their pending alerts start over, as in Prometheus.
Firing alerts keep their state and ``FiredAt``, so a restart never re-announces one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from guardian.engine.rules.alerting import ActiveMap
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.rules import AlertingRule

FOR_GRACE_PERIOD_SECONDS = 10 * 60.0
FOR_OUTAGE_TOLERANCE_SECONDS = 60 * 60.0


@dataclass(frozen=True)
class RestorePolicy:
    grace_period_seconds: float = FOR_GRACE_PERIOD_SECONDS
    outage_tolerance_seconds: float = FOR_OUTAGE_TOLERANCE_SECONDS


def restore_for_state(
    rule: AlertingRule,
    stored: ActiveMap,
    *,
    down_at: float,
    now: float,
    policy: RestorePolicy | None = None,
) -> dict[LabelSet, Alert]:
    """The active map to resume with at ``now``, from the map stored at ``down_at``."""
    policy = policy or RestorePolicy()
    downtime = max(0.0, now - down_at)
    restorable = (
        rule.for_seconds >= policy.grace_period_seconds
        and downtime <= policy.outage_tolerance_seconds
    )
    out: dict[LabelSet, Alert] = {}
    for labels, alert in stored.items():
        if alert.state is not AlertState.PENDING:
            out[labels] = alert
            continue
        if not restorable:
            continue  # starts over at the next evaluation that sees it
        remaining = round((rule.for_seconds - (down_at - alert.active_at)) * 1000) / 1000
        if remaining <= 0:
            active_at = alert.active_at
        elif remaining < policy.grace_period_seconds:
            active_at = now + policy.grace_period_seconds - rule.for_seconds
        else:
            active_at = alert.active_at + downtime
        out[labels] = replace(alert, active_at=active_at)
    return out
