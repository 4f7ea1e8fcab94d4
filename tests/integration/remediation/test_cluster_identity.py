"""The controller's own cluster UID (issue #28, item 2): read from the fake API server
through the controller's client at start-up, and a configured cluster name the source's
UIDs contradict, logged once and shown by ``guardian status``."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    RemediationParts,
    build_remediation,
)
from guardian.app.remediation.clusters import IDENTITY_QUERY, served_identities
from guardian.app.remediation.status import build_status
from guardian.app.settings.remediation import RemediationSettings
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.reclaim import FiringAlert
from guardian_common.errors import GuardianError
from testbed.kubeapi import FakeKubeAPI

NOW = 1_700_000_000.0
THEIRS = "0d4c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"


def _alert(cluster: str, node: str) -> FiringAlert:
    labels = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": "train-0", "node": node, "cluster": cluster}  # fmt: skip
    return FiringAlert(LabelSet(labels), NOW - 3600, True, group="idle")


@pytest.fixture
def ours(kube: FakeKubeAPI) -> str:
    uid: str = kube.get("Namespace", "kube-system")["metadata"]["uid"]
    return uid


@pytest.fixture
def parts(kube: FakeKubeAPI, ours: str, tmp_path: Path) -> Iterator[RemediationParts]:
    """A controller configured as cluster b, in the cluster whose exporters label their
    series a; b's exporters report another UID."""
    exporters = [
        {"cluster": "a", "cluster_uid": ours, "node": "gpu-1", "instance": "10.0.0.1:9400"},
        {"cluster": "b", "cluster_uid": THEIRS, "node": "gpu-2", "instance": "10.0.0.1:9400"},
    ]

    def query(expr: str, _ts: float) -> QueryResult:
        assert expr == IDENTITY_QUERY
        return QueryResult(tuple(PromSample(LabelSet(e), 1) for e in exporters))

    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = {
        "enabled": True,
        "cluster": "b",
        "policy_objects": False,
        "leader_election": {"enabled": False},
    }
    built = build_remediation(
        RemediationSettings.model_validate(settings),
        Database.open(tmp_path / "state.db"),
        EngineSide(lambda: []),
        ClusterAccess(
            config.new_client_from_config(config_file=str(kubeconfig)),
            source_clusters=lambda _ts: frozenset({"a", "b"}),
            source_identities=served_identities(query),
        ),
    )
    pending = built.loop.pending_pods
    deadline = time.monotonic() + 5
    while pending is not None and pending.current() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # listed and watching: stopping it is then quick
    try:
        yield built
    finally:
        built.close()


def test_the_controller_reads_its_cluster_uid_once(
    kube: FakeKubeAPI, parts: RemediationParts, ours: str
) -> None:
    uids = parts.loop.clusters.uids
    assert uids.learn_own() == ours
    assert uids.learn_own() == ours
    reads = [r for r in kube.requests(verb="get") if r.path == "/api/v1/namespaces/kube-system"]
    assert len(reads) == 1


def test_a_refused_read_fails_the_start_and_is_tried_again_each_cycle(
    kube: FakeKubeAPI, parts: RemediationParts, ours: str, caplog: pytest.LogCaptureFixture
) -> None:
    kube.fail_next(403, verb="get", path="/namespaces/kube-system$", times=3)
    clusters = parts.loop.clusters
    with pytest.raises(GuardianError):  # at start-up: `guardian run` stops, in one line
        clusters.uids.learn_own()
    clusters.split([], NOW)  # in a cycle: the names decide meanwhile
    assert clusters.uids.own_uid == ""
    clusters.split([], NOW + 30)  # the same failure again: said once
    assert [r.getMessage() for r in caplog.records if "cluster's UID" in r.getMessage()] == [
        (
            "cannot read this cluster's UID: GET /api/v1/namespaces/kube-system: 403 Forbidden: "
            "injected fault: Forbidden"
        )
    ]
    clusters.split([], NOW + 60)
    assert clusters.uids.own_uid == ours


def test_a_contradicted_cluster_name_is_logged_once_and_shown_by_status(
    parts: RemediationParts, ours: str, caplog: pytest.LogCaptureFixture
) -> None:
    clusters = parts.loop.clusters
    clusters.uids.learn_own()
    a, b = _alert("a", "gpu-1"), _alert("b", "gpu-2")
    with caplog.at_level(logging.INFO):
        for minute in range(3):
            kept, refused = clusters.split([a, b], NOW + 60 * minute)
            clusters.record(refused, NOW + 60 * minute)

    assert kept == [a]  # its exporter reports this cluster's UID, whatever the names say
    assert [(r.alert, r.refusal.value) for r in refused] == [(b, "foreign_cluster_uid")]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    expected = [
        (
            f"this controller is configured as cluster b, but series labelled cluster b come "
            f"from cluster UID {THEIRS}, not from this cluster (UID {ours})"
        ),
        (
            f"this cluster's series (cluster UID {ours}) are labelled cluster a, but this "
            "controller is configured as cluster b"
        ),
    ]
    assert errors == ["cluster misconfiguration: " + "; ".join(expected)]
    assert parts.metrics.cluster_misconfigured._value.get() == 1

    report = build_status(parts.ledger)
    assert sorted(m["reason"] for m in report.misconfigured) == sorted(expected)
    assert report.misconfigured[0]["since"] == "2023-11-14T22:13:20Z"
    assert report.to_json()["misconfigured"] == report.misconfigured
    text = report.render()
    assert "Cluster misconfiguration (2):" in text
    assert f"  since 2023-11-14T22:13:20Z: {expected[0]}\n" in text
    [shown] = report.refused
    assert shown["kind"] == "foreign_cluster_uid"
