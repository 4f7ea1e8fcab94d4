"""The remediation loop's question to the Alertmanagers, once per cycle: which of these
alerts are silenced or inhibited? One ``GET /api/v2/alerts`` per Alertmanager, filtered by
the cycle's alert names (never one call per alert), and one ``GET /api/v2/silences`` where
a listed alert is silenced (for who silenced it and until when). The answers are judged
by the pure ``guardian/engine/alertmanager/suppression.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from guardian.adapters.alert_queue import NotificationQueue
from guardian.app.alertmanager.metrics import AlertmanagerMetrics
from guardian.engine.alertmanager.suppression import Outgoing, alertname_filter, suppressions
from guardian.engine.remediation import is_pipeline
from guardian.model.alertmanager_api import AlertmanagerView, Silence, StoredAlert
from guardian.model.reclaim import FiringAlert
from guardian.model.suppressions import Suppressions

logger = logging.getLogger(__name__)


class SilenceSource(Protocol):
    name: str

    def alerts(self, filters: Sequence[str] = ()) -> tuple[StoredAlert, ...]: ...

    def silences(self) -> dict[str, Silence]: ...


class SilenceGatherer:
    """``RemediationLoop.suppressions``: the cycle's alerts in, Suppressions out."""

    def __init__(
        self,
        alertmanagers: Sequence[SilenceSource],
        outgoing: Outgoing,
        *,
        queue: NotificationQueue | None = None,
        wait: float = 2.0,
        metrics: AlertmanagerMetrics | None = None,
    ) -> None:
        self.alertmanagers = list(alertmanagers)
        self.outgoing = outgoing
        self.queue = queue
        self.wait = wait
        self.metrics = metrics

    def __call__(self, alerts: Sequence[FiringAlert]) -> Suppressions:
        firing = [a for a in alerts if a.firing]
        wanted = [a.labels for a in firing if not is_pipeline(a.labels)]
        if not wanted:
            return Suppressions(checked=True)
        if self.queue is not None and not self.queue.wait_idle(self.wait):
            logger.info("alerts still queued for Alertmanager after %ss", self.wait)
        # Pipeline alerts too, so that one inhibiting ours can be named.
        filters = [alertname_filter(a.labels for a in firing)]
        views: list[AlertmanagerView] = []
        errors: list[str] = []
        for am in self.alertmanagers:
            try:
                views.append(self._ask(am, filters))
            except Exception as exc:  # per item: one Alertmanager's failure is its own
                logger.warning("silences: %s", exc)
                errors.append(str(exc))
                self._count(am.name, "error")
                continue
            self._count(am.name, "ok")
        return suppressions(wanted, views, errors, self.outgoing)

    @staticmethod
    def _ask(am: SilenceSource, filters: Sequence[str]) -> AlertmanagerView:
        listed = am.alerts(filters)
        ids = {sid for alert in listed for sid in alert.silenced_by}
        if not ids:
            return AlertmanagerView(am.name, listed)
        try:
            known = am.silences()
        except Exception as exc:  # per item: the alerts' state is still known
            logger.warning("silences: %s", exc)
            return AlertmanagerView(am.name, listed, silences_error=str(exc))
        return AlertmanagerView(am.name, listed, {i: known[i] for i in ids if i in known})

    def _count(self, name: str, result: str) -> None:
        if self.metrics is not None:
            self.metrics.silence_queries.labels(name, result).inc()
