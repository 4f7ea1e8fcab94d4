"""The loop's cluster filter: gather which clusters the source serves, keep this
controller's alerts (engine/remediation/scope.py decides), and refuse the rest loudly:
a warning in the log, ``guardian_remediation_refused_alerts{reason}``, and the
refused-alerts table that ``guardian status`` shows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.engine.remediation.scope import (
    CLUSTER_LABEL,
    ClusterScope,
    Refusal,
    RefusedAlert,
    scope_alerts,
)
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.reclaim import FiringAlert
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

# The clusters whose GPU exporters the endpoint holds: what alerts are computed from.
# Not ``up``: with the exporter's --cluster-name only the exporters' series carry
# ``cluster``, and Prometheus's other targets would then look like a second, unnamed one.
SERVED_CLUSTERS_QUERY = (
    f'count by ({CLUSTER_LABEL}) ({{__name__=~"guardian_exporter_nvml_up|DCGM_FI_DEV_FB_USED"}})'
)

SourceClusters = Callable[[float], frozenset[str]]  # at an evaluation time; may raise


def served_clusters(query: Callable[[str, float], QueryResult]) -> SourceClusters:
    """The clusters the query endpoint holds series of, at ``ts``; "" for series without
    a ``cluster`` label (an unlabelled cluster counts as one of its own)."""

    def clusters(ts: float) -> frozenset[str]:
        result = query(SERVED_CLUSTERS_QUERY, ts)
        if result.partial:
            raise GuardianError("partial response: some stores did not answer")
        return frozenset(s.labels.get(CLUSTER_LABEL, "") for s in result.samples)

    return clusters


def alerts_only(_ts: float) -> frozenset[str]:
    """No query: only the clusters the alerts themselves name count as served."""
    return frozenset()


@dataclass
class ClusterFilter:
    # This controller's cluster (remediation.cluster, else external_labels.cluster): the
    # ``cluster`` label value of the alerts it acts on; "": not configured.
    cluster: str = ""
    source_clusters: SourceClusters = alerts_only
    store: RefusedAlertStore | None = None
    metrics: RemediationMetrics = field(default_factory=RemediationMetrics)
    scope: ClusterScope = field(default_factory=ClusterScope)  # as of the last cycle
    _last: dict[LabelSet, str] = field(default_factory=dict)  # refused last cycle: reason

    def split(
        self, alerts: Sequence[FiringAlert], now: float
    ) -> tuple[list[FiringAlert], list[RefusedAlert]]:
        """Read the served clusters (once per cycle), then split ``alerts``."""
        try:
            self.scope = ClusterScope(self.cluster, self.source_clusters(now))
        except GuardianError as exc:
            logger.warning("cannot read which clusters the source serves: %s", exc)
            self.scope = ClusterScope(self.cluster, None, str(exc))
        return scope_alerts(alerts, self.scope)

    def gap(self) -> str:
        """Why the last cycle's alerts may be incomplete: the scope could not be read."""
        if self.scope.served is not None:
            return ""
        return f"cannot tell which clusters the source serves ({self.scope.error or 'unknown'})"

    def ours(self, alerts: Iterable[FiringAlert]) -> list[FiringAlert]:
        """``alerts`` under the last cycle's scope (the re-check before a step)."""
        return scope_alerts(alerts, self.scope)[0]

    def record(self, refused: Sequence[RefusedAlert], now: float) -> None:
        """Count, store and log this cycle's refusals: a warning for each new one."""
        for kind in Refusal:
            count = sum(1 for r in refused if r.refusal is kind)
            self.metrics.refused_alerts.labels(kind.value).set(count)
        if self.store is not None:
            self.store.replace([(r.alert.labels, r.refusal.value, r.reason) for r in refused], now)
        current = {r.alert.labels: r.reason for r in refused}
        for labels, why in current.items():
            if self._last.get(labels) != why:
                name = labels.get("alertname", "?")
                logger.warning("refusing to act on %s %s: %s", name, _subject(labels), why)
        self._last = current


def _subject(labels: Mapping[str, str]) -> str:
    keys = ("cluster", "namespace", "pod", "node")
    return "{" + ", ".join(f"{k}={labels[k]}" for k in keys if labels.get(k)) + "}"
