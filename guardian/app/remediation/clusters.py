"""The loop's cluster filter: gather which clusters the source serves, keep this
controller's alerts (engine/remediation/scope.py decides), and refuse the rest loudly:
a warning in the log, ``guardian_remediation_refused_alerts{reason}``, and the
refused-alerts table that ``guardian status`` shows.

Where the source's exporters report cluster UIDs (``guardian_exporter_cluster_info``),
it also gathers which exporter reports which UID, and this controller reads its own (the
``kube-system`` Namespace's UID) at start-up; a configured cluster name those UIDs
contradict is logged as an error when first found, counted in
``guardian_remediation_cluster_misconfigured`` and shown by ``guardian status``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guardian.adapters.cluster_check import MisconfigurationStore, read_misconfigurations
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.engine.remediation.cluster_uid import (
    INFO_METRIC,
    UID_LABEL,
    UID_NAMESPACE,
    ClusterIdentities,
    ExporterIdentity,
    misconfiguration,
)
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
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

# The clusters whose GPU exporters the endpoint holds: what alerts are computed from.
# Not ``up``: with the exporter's --cluster-name only the exporters' series carry
# ``cluster``, and Prometheus's other targets would then look like a second, unnamed one.
SERVED_CLUSTERS_QUERY = (
    f'count by ({CLUSTER_LABEL}) ({{__name__=~"guardian_exporter_nvml_up|DCGM_FI_DEV_FB_USED"}})'
)

SourceClusters = Callable[[float], frozenset[str]]  # at an evaluation time; may raise

# Which exporter reports which cluster UID: one series per exporter.
IDENTITY_QUERY = f"count by ({CLUSTER_LABEL}, {UID_LABEL}, node, instance) ({INFO_METRIC})"

SourceIdentities = Callable[[float], tuple[ExporterIdentity, ...]]  # may raise
OwnUid = Callable[[], str | None]  # kube-system's UID (None: no such Namespace); may raise


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


def served_identities(query: Callable[[str, float], QueryResult]) -> SourceIdentities:
    """The exporters whose info series the query endpoint holds at ``ts``, with the
    cluster UID each reports (none from dcgm-exporter, nor from ours without API access)."""

    def identities(ts: float) -> tuple[ExporterIdentity, ...]:
        result = query(IDENTITY_QUERY, ts)
        if result.partial:
            raise GuardianError("partial response: some stores did not answer")
        return tuple(
            ExporterIdentity(
                s.labels.get(UID_LABEL, ""),
                s.labels.get(CLUSTER_LABEL, ""),
                s.labels.get("node", ""),
                s.labels.get("instance", ""),
            )
            for s in result.samples
        )

    return identities


def no_identities(_ts: float) -> tuple[ExporterIdentity, ...]:
    """No query: no exporter reports a cluster UID."""
    return ()


@dataclass
class UidCheck:
    """This controller's cluster UID and the UIDs the source's exporters report; what a
    configured cluster name contradicts in them."""

    exporters: SourceIdentities = no_identities
    read_own: OwnUid | None = None  # None: this controller's UID is not read
    store: MisconfigurationStore | None = None
    own_uid: str = ""  # "": unknown
    found: tuple[str, ...] = ()  # the misconfiguration, as of the last check
    _read: bool = False  # the own UID was read (found, or no kube-system Namespace)
    _failure: str = ""  # why the last read failed, logged once

    def learn_own(self) -> str:
        """Read this cluster's UID (once; GuardianError when the API cannot tell)."""
        if self._read or self.read_own is None:
            return self.own_uid
        uid = self.read_own()
        self._read, self.own_uid = True, uid or ""
        if uid:
            logger.info("this cluster's UID (Namespace %s): %s", UID_NAMESPACE, uid)
        else:
            logger.warning(
                "no Namespace %s: this controller cannot compare cluster UIDs", UID_NAMESPACE
            )
        return self.own_uid

    def identities(self, ts: float) -> ClusterIdentities:
        """The UIDs as of ``ts`` (GuardianError: the source could not say)."""
        try:
            self.learn_own()
        except GuardianError as exc:  # the names decide meanwhile; tried again next cycle
            if str(exc) != self._failure:
                logger.warning("cannot read this cluster's UID: %s", exc)
            self._failure = str(exc)
        return ClusterIdentities.of(self.own_uid, self.exporters(ts))

    def check(self, cluster: str, ids: ClusterIdentities, metrics: RemediationMetrics) -> None:
        """Find what ``cluster`` (the configured name) contradicts; log it when new."""
        found = misconfiguration(cluster, ids)
        if found and found != self.found:
            logger.error("cluster misconfiguration: %s", "; ".join(found))
        elif self.found and not found:
            logger.info("cluster misconfiguration resolved")
        self.found = found
        metrics.cluster_misconfigured.set(int(bool(found)))

    def record(self, now: float) -> None:
        if self.store is not None:
            self.store.replace(self.found, now)


@dataclass
class ClusterFilter:
    # This controller's cluster (remediation.cluster, else external_labels.cluster): the
    # ``cluster`` label value of the alerts it acts on; "": not configured.
    cluster: str = ""
    source_clusters: SourceClusters = alerts_only
    store: RefusedAlertStore | None = None
    metrics: RemediationMetrics = field(default_factory=RemediationMetrics)
    uids: UidCheck = field(default_factory=UidCheck)
    scope: ClusterScope = field(default_factory=ClusterScope)  # as of the last cycle
    _last: dict[LabelSet, str] = field(default_factory=dict)  # refused last cycle: reason

    def split(
        self, alerts: Sequence[FiringAlert], now: float
    ) -> tuple[list[FiringAlert], list[RefusedAlert]]:
        """Read the served clusters and UIDs (once per cycle), then split ``alerts``."""
        try:
            served = self.source_clusters(now)
            ids = self.uids.identities(now)
        except GuardianError as exc:
            logger.warning("cannot read which clusters the source serves: %s", exc)
            self.scope = ClusterScope(self.cluster, None, str(exc))
        else:
            self.scope = ClusterScope(self.cluster, served, "", ids)
            self.uids.check(self.cluster, ids, self.metrics)
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
        self.uids.record(now)
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


def misconfigured_status(db: Database) -> list[dict[str, Any]]:
    """The last cycle's cluster misconfiguration, for ``guardian status``."""
    return [
        {"reason": m.message, "since": rfc3339(m.since), "last_seen": rfc3339(m.last_seen)}
        for m in read_misconfigurations(db)
    ]


def _subject(labels: Mapping[str, str]) -> str:
    keys = ("cluster", "namespace", "pod", "node")
    return "{" + ", ".join(f"{k}={labels[k]}" for k in keys if labels.get(k)) + "}"
