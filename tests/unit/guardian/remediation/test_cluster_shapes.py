"""The shapes of docs/deploy.md's table "Several clusters behind one query endpoint"
(issue #28, item 2), each checked here: the source's series as a Thanos holding both
clusters would answer the controller's two queries, and what the cluster filter then
does with an alert of each cluster. The table is read from the document, so a row it
states and the controller's behaviour cannot drift apart.

Cluster A is this controller's (kube-system UID ``UID_A``), B the other one. Both run a
pod ``ml/train-0``, A's on node ``gpu-1``, B's on ``gpu-2`` (or also ``gpu-1``: "same node
names"), and both exporters have the same pod IP (each cluster its own pod network).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from guardian.app.remediation.clusters import (
    IDENTITY_QUERY,
    SERVED_CLUSTERS_QUERY,
    ClusterFilter,
    UidCheck,
    served_clusters,
    served_identities,
)
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.reclaim import FiringAlert

DEPLOY_MD = Path(__file__).resolve().parents[4] / "docs" / "deploy.md"
HEADING = "## Several clusters behind one query endpoint"
NOW = 1_700_000_000.0
UID_A = "3c9d6f0e-5b1a-4c8e-9f27-a1b2c3d4e5f6"
UID_B = "8e7f6a5b-4c3d-4e2f-8a1b-0c9d8e7f6a5b"
INSTANCE = "10.244.1.7:9400"
EXPORTERS = ("GPU Guardian's exporter", "dcgm-exporter")


@dataclass(frozen=True)
class Cluster:
    uid: str
    label: str  # its series' cluster label; "": none
    node: str

    @property
    def gpu(self) -> str:
        return f"GPU-{self.uid}"


@dataclass(frozen=True)
class Shape:
    clusters: tuple[Cluster, ...]  # A first
    configured: str  # remediation.cluster of A's controller; "": not set

    def query(self, exporter: str) -> tuple[QueryResult, QueryResult]:
        """(the served clusters, the exporters' UIDs) as the source answers them."""
        served = {c.label for c in self.clusters}
        clusters = tuple(PromSample(LabelSet({"cluster": n} if n else {}), 1) for n in served)
        uids = tuple(
            PromSample(LabelSet(_info(c)), 1) for c in self.clusters if exporter == EXPORTERS[0]
        )
        return QueryResult(clusters), QueryResult(uids)


def _info(c: Cluster) -> dict[str, str]:
    labels = {"cluster_uid": c.uid, "node": c.node, "instance": INSTANCE}
    return labels | ({"cluster": c.label} if c.label else {})


def _alert(c: Cluster) -> FiringAlert:
    labels = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": "train-0", "node": c.node, "instance": INSTANCE, "uuid": c.gpu}  # fmt: skip
    if c.label:
        labels["cluster"] = c.label
    return FiringAlert(LabelSet(labels), NOW - 3600, True, group="idle")


def _shape(text: str, configured: str) -> Shape:
    """A row's shape from its first two cells."""
    names = re.findall(r"`(\w+)`", text)
    if text.startswith("one cluster"):
        return Shape((Cluster(UID_A, names[0] if names else "", "gpu-1"),), configured)
    if "both unlabelled" in text:
        labels = ["", ""]
    elif text.startswith("mixed: ours unlabelled"):
        labels = ["", names[0]]
    elif text.startswith("mixed: ours labelled"):
        labels = [names[0], ""]
    else:
        labels = names
    other = "gpu-1" if "same node names" in text else "gpu-2"
    return Shape((Cluster(UID_A, labels[0], "gpu-1"), Cluster(UID_B, labels[1], other)), configured)


def _rows() -> list[tuple[str, str, str, str]]:
    """(shape, remediation.cluster, with our exporter, with dcgm-exporter) per table row."""
    text = DEPLOY_MD.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    table: list[tuple[str, str, str, str]] = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 4:
            break
        table.append((cells[0], cells[1], cells[2], cells[3]))
    return table


def _cell(outcomes: list[str], misconfigured: bool) -> str:
    """What the controller does, as the table says it."""
    whose = ["its own", "the other's"]
    parts = [
        f"acts on {who}" if what == "ok" else f"refuses {who} (`{what}`)"
        for who, what in zip(whose, outcomes, strict=False)
    ]
    if len(outcomes) > 1 and outcomes[1] == "ok":
        parts[1] = "**acts on the other's**"
    if misconfigured:
        parts.append("reports the misconfiguration")
    return "; ".join(parts)


def _decide(shape: Shape, exporter: str) -> tuple[list[str], bool]:
    clusters, uids = shape.query(exporter)
    answers = {SERVED_CLUSTERS_QUERY: clusters, IDENTITY_QUERY: uids}

    def query(expr: str, _ts: float) -> QueryResult:
        return answers[expr]

    check = UidCheck(served_identities(query), lambda: UID_A)
    filt = ClusterFilter(shape.configured, served_clusters(query), uids=check)
    alerts = [_alert(c) for c in shape.clusters]
    ours, refused = filt.split(alerts, NOW)
    kinds = {id(r.alert): r.refusal.value for r in refused}
    return ["ok" if a in ours else kinds[id(a)] for a in alerts], bool(check.found)


ROWS = _rows()


def test_the_table_has_every_shape() -> None:
    shapes = [row[0] for row in ROWS]
    assert len(ROWS) >= 10
    for expected in ("labelled", "unlabelled", "both unlabelled", "mixed", "misnamed"):
        assert any(expected in s for s in shapes), expected


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("row", ROWS, ids=[f"{r[0]} ({r[1]})" for r in ROWS])
def test_each_row_is_what_the_controller_does(
    row: tuple[str, str, str, str], exporter: str
) -> None:
    text, configured, with_ours, with_dcgm = row
    cluster = "" if configured == "not set" else configured.strip("`")
    outcomes, misconfigured = _decide(_shape(text, cluster), exporter)
    said = with_ours if exporter == EXPORTERS[0] else with_dcgm
    assert said == _cell(outcomes, misconfigured)
