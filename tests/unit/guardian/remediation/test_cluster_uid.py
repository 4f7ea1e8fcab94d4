"""Cluster identity by UID (issue #28, item 2): which cluster an alert's exporter runs in,
and what a configured cluster name contradicts."""

from __future__ import annotations

import pytest

from guardian.engine.remediation.cluster_uid import (
    ClusterIdentities,
    ExporterIdentity,
    UidVerdict,
    misconfiguration,
)
from guardian.engine.remediation.scope import ClusterScope, Refusal, scope_alerts
from guardian.model.labels import LabelSet
from guardian.model.reclaim import FiringAlert

from .factories import NOW, pipeline_alert

OURS, THEIRS = "6b1f0c3e-ours", "9d2e7a41-theirs"


def _ids(*exporters: ExporterIdentity, own: str = OURS) -> ClusterIdentities:
    return ClusterIdentities.of(own, exporters)


def _alert(**labels: str) -> FiringAlert:
    base = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml"}
    return FiringAlert(LabelSet({**base, "pod": "p", **labels}), NOW - 3600, True, group="idle")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        # The alert's exporter: the info series with its cluster label and node.
        ({"cluster": "a", "node": "n1"}, UidVerdict.OURS),
        ({"cluster": "a", "node": "n2"}, UidVerdict.FOREIGN),
        ({"node": "n1"}, UidVerdict.OURS),  # unlabelled: the unlabelled exporter on n1
        ({"node": "n3"}, UidVerdict.FOREIGN),
        # No node: the instance decides.
        ({"cluster": "a", "instance": "10.0.0.2:9400"}, UidVerdict.FOREIGN),
        ({"cluster": "a", "instance": "10.0.0.1:9400"}, UidVerdict.OURS),
        # No exporter of its own reports a UID: the UIDs under its cluster label do.
        ({"cluster": "a", "node": "n9"}, UidVerdict.AMBIGUOUS),  # a is both: ours and theirs
        ({"cluster": "b", "node": "n9"}, UidVerdict.FOREIGN),  # b is theirs only
        ({"cluster": "c", "node": "n9"}, None),  # no UID under c: the names decide
        ({"cluster": "a"}, UidVerdict.AMBIGUOUS),
    ],
)
def test_the_alerts_exporter_tells_its_cluster(
    labels: dict[str, str], expected: UidVerdict | None
) -> None:
    ids = _ids(
        ExporterIdentity(OURS, "a", "n1", "10.0.0.1:9400"),
        ExporterIdentity(THEIRS, "a", "n2", "10.0.0.2:9400"),  # misnamed: another's, as a
        ExporterIdentity(THEIRS, "b", "n1", "10.0.0.1:9400"),
        ExporterIdentity(OURS, "", "n1"),
        ExporterIdentity(THEIRS, "", "n3"),
    )
    found = ids.verdict(labels)
    assert (found[0] if found else None) is expected


def test_without_its_own_uid_the_controller_only_refuses_what_is_ambiguous() -> None:
    ids = _ids(
        ExporterIdentity(OURS, "", "n1"), ExporterIdentity(THEIRS, "", "n1"), own=""
    )  # two unlabelled clusters with a node n1 each
    assert ids.verdict({"node": "n1"}) == (
        UidVerdict.AMBIGUOUS,
        (
            f"exporters on node n1 report cluster UIDs {OURS}, {THEIRS} and this controller's "
            "own cluster UID is unknown"
        ),
    )
    assert ids.verdict({"node": "n2"}) == (
        UidVerdict.AMBIGUOUS,
        (
            f"series without a cluster label come from clusters with UIDs {OURS}, {THEIRS} and "
            "no exporter of the alert reports one: its cluster cannot be established"
        ),
    )
    one = _ids(ExporterIdentity(THEIRS, "", "n1"), own="")
    assert one.verdict({"node": "n1"}) is None  # one cluster, as far as anyone can tell


def test_uids_decide_whatever_the_names_say() -> None:
    ids = _ids(ExporterIdentity(OURS, "a", "n1"), ExporterIdentity(THEIRS, "b", "n2"))
    scope = ClusterScope("b", frozenset({"a", "b"}), identities=ids)  # misnamed: b
    ours, refused = scope_alerts(
        [_alert(cluster="a", node="n1"), _alert(cluster="b", node="n2")], scope
    )
    assert [a.labels["cluster"] for a in ours] == ["a"]
    [theirs] = refused
    assert theirs.refusal is Refusal.FOREIGN_CLUSTER_UID
    assert theirs.reason == (
        f"the alert's exporter (node n2) reports cluster UID {THEIRS}; this controller's "
        f"cluster has UID {OURS}"
    )


def test_without_uids_the_names_decide_as_before() -> None:
    scope = ClusterScope("a", frozenset({"a", "b"}), identities=_ids())
    kinds = [r.refusal for r in scope_alerts([_alert(cluster="b"), _alert()], scope)[1]]
    assert kinds == [Refusal.FOREIGN_CLUSTER, Refusal.MISSING_CLUSTER]


def test_pipeline_alerts_of_another_cluster_by_uid_are_dropped_ambiguous_ones_held() -> None:
    ids = _ids(ExporterIdentity(THEIRS, "", "n2"), ExporterIdentity(OURS, "", "n1"))
    scope = ClusterScope("", frozenset({""}), identities=ids)
    base = pipeline_alert().labels.without("cluster").without("node")
    theirs = FiringAlert(LabelSet({**base, "node": "n2"}), NOW, True)
    unknown = FiringAlert(LabelSet({**base, "node": "n7"}), NOW, True)
    ours, refused = scope_alerts([theirs, unknown], scope)
    assert ours == [unknown]  # a hold: it may be about ours
    assert refused == []


@pytest.mark.parametrize(
    ("cluster", "exporters", "expected"),
    [
        ("a", [("a", OURS)], []),
        ("a", [("a", OURS), ("b", THEIRS)], []),
        ("a", [("", OURS), ("b", THEIRS)], []),  # our series unlabelled: no contradiction
        ("", [("a", OURS), ("b", THEIRS)], []),  # no name configured: none to contradict
        ("a", [], []),  # no UIDs served (dcgm-exporter)
        (
            "b",
            [("a", OURS), ("b", THEIRS)],
            [
                (
                    f"this controller is configured as cluster b, but series labelled cluster b "
                    f"come from cluster UID {THEIRS}, not from this cluster (UID {OURS})"
                ),
                (
                    f"this cluster's series (cluster UID {OURS}) are labelled cluster a, but this "
                    "controller is configured as cluster b"
                ),
            ],
        ),
        (
            "c",
            [("a", OURS)],
            [
                (
                    f"this cluster's series (cluster UID {OURS}) are labelled cluster a, but this "
                    "controller is configured as cluster c"
                )
            ],
        ),
        (
            "a",
            [("a", OURS), ("a", THEIRS)],  # two clusters labelled a
            [
                (
                    f"this controller is configured as cluster a, but series labelled cluster a "
                    f"come from cluster UID {THEIRS}, not from this cluster (UID {OURS})"
                )
            ],
        ),
    ],
)
def test_a_configured_name_the_uids_contradict_is_a_misconfiguration(
    cluster: str, exporters: list[tuple[str, str]], expected: list[str]
) -> None:
    found = [ExporterIdentity(uid, name, f"n{i}") for i, (name, uid) in enumerate(exporters)]
    assert list(misconfiguration(cluster, _ids(*found))) == expected
    assert misconfiguration(cluster, _ids(*found, own="")) == ()  # own UID unknown
