"""Which alerts are this controller's to act on: those of its own cluster.

One query endpoint (a Thanos) may serve several clusters, and workload and pod names
repeat across clusters, so an alert from another cluster would resolve to a same-named
pod in ours. The ``cluster`` label decides:

- series without ``cluster`` count as a cluster of their own (the unnamed one): one
  endpoint may hold an unlabelled cluster beside labelled ones;
- the controller's own cluster (``remediation.cluster``, else ``external_labels.cluster``)
  acts on alerts with that ``cluster``, and on alerts without one only while the source
  serves no other cluster: no other name, and no unlabelled series beside its own name;
- a controller that does not know its cluster acts only while the source serves at most
  one cluster, the unnamed one counted;
- an alert of another cluster is never acted on.

Where the source's exporters report cluster UIDs (GPU Guardian's exporter does; see
cluster_uid.py), the UIDs decide first: an alert whose exporter reports this cluster's
UID is ours, one that reports another's is refused, whatever the names say; the names
decide only what the UIDs leave open (dcgm-exporter's series carry none).

Then the pod an alert names, as read from the cluster, must be the pod the evidence is
about: on the alert's ``node`` and, where the series carry ``pod_uid``, with that UID.

Refused alerts come back with a reason, for the logs, the metrics and ``guardian status``.
Pipeline alerts of another cluster are dropped silently (they say nothing about ours);
those without a ``cluster`` stay, as holds: they may be about ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from guardian.engine.remediation.cluster_uid import CLUSTER_LABEL, ClusterIdentities, UidVerdict
from guardian.engine.remediation.guards import is_pipeline, pod_mismatch
from guardian.model.reclaim import ClusterSnapshot, FiringAlert

__all__ = [
    "CLUSTER_LABEL",
    "ClusterScope",
    "Refusal",
    "RefusedAlert",
    "check_pods",
    "scope_alerts",
]


class Refusal(StrEnum):
    """Why an alert is not this controller's; the metrics' ``reason`` label."""

    FOREIGN_CLUSTER = "foreign_cluster"
    MISSING_CLUSTER = "missing_cluster"
    CLUSTER_NOT_SET = "cluster_not_set"
    CLUSTERS_UNKNOWN = "clusters_unknown"
    FOREIGN_CLUSTER_UID = "foreign_cluster_uid"  # its exporter reports another cluster's UID
    AMBIGUOUS_CLUSTER = "ambiguous_cluster"  # the UIDs under its cluster label are several
    POD_MISMATCH = "pod_mismatch"  # the pod read is not the one the alert is about


@dataclass(frozen=True, slots=True)
class RefusedAlert:
    alert: FiringAlert
    refusal: Refusal
    reason: str


@dataclass(frozen=True)
class ClusterScope:
    """This controller's cluster ("": not configured) and the clusters the source serves,
    "" for series without ``cluster`` (None: they could not be read, ``error`` says why);
    the cluster UIDs, where the source's exporters report them."""

    cluster: str = ""
    served: frozenset[str] | None = frozenset()
    error: str = ""
    identities: ClusterIdentities = field(default_factory=ClusterIdentities)

    def with_alerts(self, alerts: Iterable[FiringAlert]) -> ClusterScope:
        """The served clusters, also counting those the alerts themselves are about (an
        alert without ``cluster`` was computed from unlabelled series)."""
        if self.served is None:
            return self
        named = {a.labels.get(CLUSTER_LABEL, "") for a in alerts if not is_pipeline(a.labels)}
        return replace(self, served=frozenset(self.served | named))

    def refusal(self, labels: Mapping[str, str]) -> tuple[Refusal, str] | None:
        """Why an alert with ``labels`` is not ours to act on, or None: by the cluster
        UIDs where they tell, else by the names."""
        found = self.identities.verdict(labels)
        if found is None:
            return self._by_name(labels)
        verdict, why = found
        if verdict is UidVerdict.OURS:
            return None
        if verdict is UidVerdict.FOREIGN:
            return Refusal.FOREIGN_CLUSTER_UID, why
        return Refusal.AMBIGUOUS_CLUSTER, why

    def _by_name(self, labels: Mapping[str, str]) -> tuple[Refusal, str] | None:
        cluster = labels.get(CLUSTER_LABEL, "")
        own = self.cluster  # this controller's
        if own and cluster == own:
            return None
        if own and cluster:
            return Refusal.FOREIGN_CLUSTER, (
                f"the alert is about cluster {cluster}; this controller acts on cluster {own}"
            )
        if self.served is None:
            return Refusal.CLUSTERS_UNKNOWN, (
                f"cannot tell which clusters the source serves ({self.error or 'unknown'}), "
                f"so {_named(cluster)} may belong to another cluster"
            )
        names = self.served - {""}
        if own and names - {own}:
            return Refusal.MISSING_CLUSTER, (
                f"the alert has no cluster label and the source serves clusters "
                f"{_listed(names | {own})}: it may be another cluster's"
            )
        if own and own in names and "" in self.served:
            return Refusal.MISSING_CLUSTER, (
                f"the alert has no cluster label and the source serves cluster {own} and "
                "series without a cluster label: it may be another cluster's"
            )
        if not own and len(self.served) > 1:
            return Refusal.CLUSTER_NOT_SET, (
                f"the source serves clusters {_listed(self.served)} and this controller's "
                "cluster is not set (remediation.cluster, or external_labels.cluster)"
            )
        return None


def _listed(clusters: Iterable[str]) -> str:
    """Cluster names for a message; the unlabelled one says so."""
    return ", ".join(c or "(series without a cluster label)" for c in sorted(clusters))


def _named(cluster: str) -> str:
    return f"cluster {cluster}" if cluster else "an alert without a cluster label"


# Refusals that say the alert is another cluster's (not merely unproven).
_OTHERS = (Refusal.FOREIGN_CLUSTER, Refusal.FOREIGN_CLUSTER_UID)


def scope_alerts(
    alerts: Iterable[FiringAlert], scope: ClusterScope
) -> tuple[list[FiringAlert], list[RefusedAlert]]:
    """(the alerts this controller may act on, the refused ones with their reasons)."""
    alerts = list(alerts)
    scope = scope.with_alerts(alerts)
    ours: list[FiringAlert] = []
    refused: list[RefusedAlert] = []
    for alert in alerts:
        found = scope.refusal(alert.labels)
        if found is None:
            ours.append(alert)
        elif is_pipeline(alert.labels):
            if found[0] not in _OTHERS:
                ours.append(alert)  # a hold that may be about our cluster
        else:
            refused.append(RefusedAlert(alert, *found))
    return ours, refused


def check_pods(
    alerts: Iterable[FiringAlert], snapshot: ClusterSnapshot
) -> tuple[list[FiringAlert], list[RefusedAlert]]:
    """(the alerts whose pod, as read, is the one they are about; the others, refused)."""
    ours: list[FiringAlert] = []
    refused: list[RefusedAlert] = []
    for alert in alerts:
        ns, pod = alert.labels.get("namespace", ""), alert.labels.get("pod", "")
        owner = snapshot.pod_owners.get((ns, pod))
        why = pod_mismatch(alert.labels, owner) if owner is not None else None
        if why is None:
            ours.append(alert)
        else:
            refused.append(RefusedAlert(alert, Refusal.POD_MISMATCH, f"pod {ns}/{pod}: {why}"))
    return ours, refused
