"""Which alerts a controller may act on (its cluster's), and whether the pod read is the
pod an alert is about (issue #13, item 2); how a cluster-wide hold explains itself
(item 3)."""

from __future__ import annotations

import pytest

from guardian.engine.remediation import Cycle, plan
from guardian.engine.remediation.guards import pod_mismatch
from guardian.engine.remediation.scope import ClusterScope, Refusal, check_pods, scope_alerts
from guardian.model.labels import LabelSet
from guardian.model.reclaim import FiringAlert, LedgerView, PodOwner

from .factories import NOW, alert, enforce, healthy, pipeline_alert, ref, snapshot


def _in(cluster: str | None, **labels: str) -> FiringAlert:
    base = alert(**labels)
    wanted = base.labels.without("cluster").to_dict()
    if cluster is not None:
        wanted["cluster"] = cluster
    return FiringAlert(LabelSet(wanted), base.active_at, base.firing, group=base.group)


def _kinds(alerts: list[FiringAlert], scope: ClusterScope) -> list[str]:
    ours, refused = scope_alerts(alerts, scope)
    by_labels = {r.alert.labels: r.refusal.value for r in refused}
    return ["ok" if a in ours else by_labels.get(a.labels, "dropped") for a in alerts]


@pytest.mark.parametrize(
    ("own", "served", "alert_clusters", "expected"),
    [
        # A controller of cluster a.
        ("a", {"a", "b"}, ["a", "b", None], ["ok", "foreign_cluster", "missing_cluster"]),
        ("a", {"a"}, ["a"], ["ok"]),
        # Unlabelled series are a cluster of their own (issue #28: cluster A unlabelled
        # beside B labelled): an alert without cluster may be theirs.
        ("a", {"a"}, ["a", None], ["ok", "missing_cluster"]),
        ("a", {"", "a"}, ["a", None], ["ok", "missing_cluster"]),
        ("a", {""}, [None], ["ok"]),  # one unlabelled cluster, ours by configuration
        ("a", set(), [None], ["ok"]),  # no cluster anywhere: one unnamed cluster
        ("a", {"b"}, [None], ["missing_cluster"]),  # the source serves only another
        # A controller that does not know its cluster.
        ("", {"a"}, ["a"], ["ok"]),
        ("", {"a"}, ["a", None], ["cluster_not_set"] * 2),
        ("", {"", "b"}, [None], ["cluster_not_set"]),  # A unlabelled, B named
        ("", {""}, [None], ["ok"]),
        ("", set(), [None], ["ok"]),
        ("", {"a", "b"}, ["a", "b", None], ["cluster_not_set"] * 3),
        # The served clusters also count those the alerts name (up without cluster).
        ("", set(), ["a", "b"], ["cluster_not_set"] * 2),
        ("a", set(), ["a", "b", None], ["ok", "foreign_cluster", "missing_cluster"]),
        # The source could not be read: only an alert that names our cluster is ours.
        ("a", None, ["a", "b", None], ["ok", "foreign_cluster", "clusters_unknown"]),
        ("", None, ["a"], ["clusters_unknown"]),
    ],
)
def test_cluster_scope(
    own: str, served: set[str] | None, alert_clusters: list[str | None], expected: list[str]
) -> None:
    scope = ClusterScope(own, None if served is None else frozenset(served), "timeout")
    alerts = [_in(c, pod=f"p{i}") for i, c in enumerate(alert_clusters)]
    assert _kinds(alerts, scope) == expected


def test_refusals_say_why() -> None:
    scope = ClusterScope("a", frozenset({"a", "b"}))
    _, refused = scope_alerts([_in("b"), _in(None, pod="x")], scope)
    assert [r.reason for r in refused] == [
        "the alert is about cluster b; this controller acts on cluster a",
        (
            "the alert has no cluster label and the source serves clusters a, b: it may be "
            "another cluster's"
        ),
    ]
    _, [unset] = scope_alerts([_in("a")], ClusterScope("", frozenset({"a", "b"})))
    assert unset.refusal is Refusal.CLUSTER_NOT_SET
    assert "remediation.cluster" in unset.reason
    _, [unknown] = scope_alerts([_in(None)], ClusterScope("a", None, "503 from Thanos"))
    assert "503 from Thanos" in unknown.reason


def test_pipeline_alerts_of_another_cluster_are_dropped_unnamed_ones_kept() -> None:
    scope = ClusterScope("a", frozenset({"a", "b"}))
    theirs = FiringAlert(LabelSet({**pipeline_alert().labels, "cluster": "b"}), NOW, True)
    unnamed = FiringAlert(pipeline_alert().labels.without("cluster"), NOW, True)
    ours, refused = scope_alerts([theirs, unnamed], scope)
    assert ours == [unnamed]
    assert refused == []  # not acted on anyway: nothing to refuse loudly


@pytest.mark.parametrize(
    ("labels", "owner", "expected"),
    [
        ({"node": "n1"}, PodOwner("ml", "p", None, node="n1", uid="u1"), None),
        ({"node": "n1"}, PodOwner("ml", "p", None, node="n2"), "runs on node n2"),
        ({"node": "n1"}, PodOwner("ml", "p", None, node=""), "is not scheduled on any node"),
        ({"node": "n1"}, PodOwner("ml", "p", None), None),  # not read: nothing to compare
        ({}, PodOwner("ml", "p", None, node="n2"), None),  # the alert names no node
        ({"pod_uid": "u1"}, PodOwner("ml", "p", None, uid="u1"), None),
        ({"pod_uid": "u1"}, PodOwner("ml", "p", None, uid="u2"), "has UID u2: replaced"),
    ],
)
def test_pod_mismatch(labels: dict[str, str], owner: PodOwner, expected: str | None) -> None:
    found = pod_mismatch(labels, owner)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert expected in found


def test_check_pods_and_the_planner_both_refuse_another_pod() -> None:
    snap = snapshot()
    owner = snap.pod_owners[("ml", "web-1")]
    moved = type(snap)(
        snap.workloads,
        snap.namespaces,
        {("ml", "web-1"): PodOwner("ml", "web-1", owner.root, node="n7", uid="u9")},
        snap.controller_namespace,
    )
    idle = alert(pod_uid="u1")
    ours, refused = check_pods([idle], moved)
    assert ours == []
    assert refused[0].refusal is Refusal.POD_MISMATCH
    assert refused[0].reason.startswith("pod ml/web-1: the alert is about node n1")
    result = plan(Cycle([idle], moved, LedgerView(), NOW, health=healthy()), [enforce()])
    assert result.actions == ()
    assert any("not the pod the evidence is about" in w.reason for w in result.waits)


def test_a_cluster_wide_hold_says_so_and_why() -> None:
    down = FiringAlert(
        LabelSet(
            {
                "alertname": "GpuExporterDown",
                "guardian_class": "pipeline",
                "cluster": "c1",
                "reason": "scrape_failing",
                "job": "gpu-guardian-exporter",
                "instance": "10.0.0.3:9835",
            }
        ),
        NOW - 600,
        True,
        group="pipeline",
    )
    result = plan(
        Cycle([alert(), down], snapshot(), LedgerView(), NOW, health=healthy()), [enforce()]
    )
    [wait] = [w for w in result.waits if w.workload == ref()]
    assert wait.reason == (
        "missing data is not idleness: GpuExporterDown is firing for its cluster "
        "(cluster-wide hold: GpuExporterDown (reason=scrape_failing, job=gpu-guardian-exporter, "
        "instance=10.0.0.3:9835) names no node, so the data of every node in cluster c1 is "
        "in doubt)"
    )


def test_a_pipeline_alert_without_cluster_holds_a_clustered_alert() -> None:
    """The exporter labels its series with cluster; Prometheus's own (remote write) not."""
    behind = FiringAlert(
        LabelSet({"alertname": "PrometheusRemoteWriteBehind", "guardian_class": "pipeline"}),
        NOW - 600,
        True,
        group="pipeline",
    )
    result = plan(
        Cycle([alert(), behind], snapshot(), LedgerView(), NOW, health=healthy()), [enforce()]
    )
    assert result.actions == ()
    assert any("cluster-wide hold: PrometheusRemoteWriteBehind" in w.reason for w in result.waits)
