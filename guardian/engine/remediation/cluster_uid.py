"""Which cluster an alert's exporter runs in, by cluster UID rather than by name.

The UID of the ``kube-system`` Namespace identifies a cluster (the convention
OpenTelemetry's ``k8s.cluster.uid`` follows): names repeat, are mistyped and are copied
from one cluster's config to the next; this UID is set once, by the API server. GPU
Guardian's exporter exports it as ``guardian_exporter_cluster_info{cluster_uid}``, with
its ``node`` (and ``cluster`` where its series carry one); the controller reads its own.

An alert's exporter is the info series with the alert's ``cluster`` label (or none) and
its ``node`` (else its ``instance``). Then:

- every UID it reports is this controller's: the alert is ours, whatever the names say;
- one of them is another cluster's: refused (``foreign_cluster_uid``);
- no exporter of the alert's reports one, but series under the alert's ``cluster`` label
  (or under none) do: they must all be ours, else the alert is refused, as another
  cluster's when ours is not among them, as one whose cluster cannot be established when
  ours is one of several;
- no series under that label carries a UID (dcgm-exporter): the names decide (scope.py);
- this controller's own UID is unknown: the names decide too, except where the alert's
  exporter, or its label, has several UIDs (its cluster cannot be established).

Pure: the gathering is app/remediation/clusters.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

CLUSTER_LABEL = "cluster"
UID_LABEL = "cluster_uid"
INFO_METRIC = "guardian_exporter_cluster_info"
# The Namespace whose UID is the cluster's.
UID_NAMESPACE = "kube-system"


class UidVerdict(StrEnum):
    OURS = "ours"
    FOREIGN = "foreign"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True, slots=True)
class ExporterIdentity:
    """One info series: an exporter, the cluster UID it read and where it runs."""

    uid: str
    cluster: str = ""  # its ``cluster`` label; "": none
    node: str = ""
    instance: str = ""


def _index(pairs: Iterable[tuple[tuple[str, str], str]]) -> dict[tuple[str, str], frozenset[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for key, uid in pairs:
        out.setdefault(key, set()).add(uid)
    return {key: frozenset(uids) for key, uids in out.items()}


@dataclass(frozen=True)
class ClusterIdentities:
    """This controller's cluster UID ("": unknown) and the UIDs the source's exporters
    report, by (``cluster`` label, node), (``cluster`` label, instance) and label."""

    own_uid: str = ""
    by_node: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    by_instance: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    by_name: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, own_uid: str, exporters: Iterable[ExporterIdentity]) -> ClusterIdentities:
        found = [e for e in exporters if e.uid]
        return cls(
            own_uid,
            _index(((e.cluster, e.node), e.uid) for e in found if e.node),
            _index(((e.cluster, e.instance), e.uid) for e in found if e.instance),
            _by_name(found),
        )

    def reported(self, labels: Mapping[str, str]) -> tuple[frozenset[str], str]:
        """The UIDs the alert's exporter reports, and which exporter that is."""
        cluster = labels.get(CLUSTER_LABEL, "")
        node, instance = labels.get("node", ""), labels.get("instance", "")
        if node:
            return self.by_node.get((cluster, node), frozenset()), f"node {node}"
        if instance:
            return self.by_instance.get((cluster, instance), frozenset()), f"instance {instance}"
        return frozenset(), ""

    def verdict(self, labels: Mapping[str, str]) -> tuple[UidVerdict, str] | None:
        """What the UIDs say about an alert with ``labels``; None: they say nothing."""
        own = self.own_uid
        uids, exporter = self.reported(labels)
        if uids:
            if own and uids - {own}:
                return UidVerdict.FOREIGN, (
                    f"the alert's exporter ({exporter}) reports cluster UID "
                    f"{_listed(uids - {own})}; this controller's cluster has UID {own}"
                )
            if own:
                return UidVerdict.OURS, ""
            if len(uids) > 1:
                return UidVerdict.AMBIGUOUS, (
                    f"exporters on {exporter} report cluster UIDs {_listed(uids)} and this "
                    "controller's own cluster UID is unknown"
                )
            return None
        return self._by_label(labels.get(CLUSTER_LABEL, ""))

    def _by_label(self, cluster: str) -> tuple[UidVerdict, str] | None:
        """For an alert whose exporter reports no UID: the UIDs of its ``cluster`` label."""
        named = self.by_name.get(cluster, frozenset())
        own = self.own_uid
        where = f"series of cluster {cluster}" if cluster else "series without a cluster label"
        if named and own and own not in named:
            return UidVerdict.FOREIGN, (
                f"no exporter of the alert reports a cluster UID, and {where} come from "
                f"cluster UID {_listed(named)}; this controller's cluster has UID {own}"
            )
        if len(named) > 1:
            return UidVerdict.AMBIGUOUS, (
                f"{where} come from clusters with UIDs {_listed(named)} and no exporter of the "
                "alert reports one: its cluster cannot be established"
            )
        return None


def misconfiguration(cluster: str, ids: ClusterIdentities) -> tuple[str, ...]:
    """How a configured cluster name (``cluster``) contradicts the source's UIDs: series
    under that name come from another cluster, or this cluster's series carry another."""
    own = ids.own_uid
    if not cluster or not own:
        return ()
    found: list[str] = []
    others = ids.by_name.get(cluster, frozenset()) - {own}
    if others:
        found.append(
            f"this controller is configured as cluster {cluster}, but series labelled "
            f"cluster {cluster} come from cluster UID {_listed(others)}, not from this "
            f"cluster (UID {own})"
        )
    names = sorted(n for n, uids in ids.by_name.items() if own in uids and n not in ("", cluster))
    if names:
        found.append(
            f"this cluster's series (cluster UID {own}) are labelled cluster "
            f"{', '.join(names)}, but this controller is configured as cluster {cluster}"
        )
    return tuple(found)


def _by_name(exporters: Iterable[ExporterIdentity]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for e in exporters:
        out[e.cluster] = out.get(e.cluster, frozenset()) | {e.uid}
    return out


def _listed(uids: Iterable[str]) -> str:
    return ", ".join(sorted(uids))
