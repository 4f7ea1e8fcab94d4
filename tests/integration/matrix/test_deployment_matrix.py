"""The deployment matrix (issue #13, "done when"): the demo's story in every shape that
matters, asserted in each. One run of driver.py starts every shape at once (about a
minute on two cores); each case below checks its own shape's outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testbed.demo.fleet import DOOMED_NODE, NOTEBOOK, TRAINING

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK_REF = f"{NOTEBOOK.namespace}/Deployment/{NOTEBOOK.name}"
TRAINING_REF = f"{TRAINING.namespace}/Deployment/{TRAINING.name}"
Results = dict[str, Any]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    workdir = tmp_path_factory.mktemp("matrix")
    out = workdir / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.matrix.driver", str(workdir), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    logs = workdir / "logs"
    assert out.exists(), f"{done.stdout}{done.stderr}\nlogs in {logs}"
    found: Results = json.loads(out.read_text(encoding="utf-8"))
    assert done.returncode == 0, f"the stories did not finish:\n{done.stderr[-3000:]}\n{found}"
    return found


def _alerts(case: Results, name: str, **labels: str) -> list[dict[str, Any]]:
    return [
        a
        for a in case["alerts"]
        if a["labels"].get("alertname") == name
        and all(a["labels"].get(k, "") == v for k, v in labels.items())
    ]


def _notebook_reclaimed_training_untouched(case: Results) -> None:
    assert [r for _, r in case["replicas"][f"{NOTEBOOK.namespace}/{NOTEBOOK.name}"]] == [1, 0]
    assert [r for _, r in case["replicas"][f"{TRAINING.namespace}/{TRAINING.name}"]] == [2]
    applied = [(e["workload"], e["step"]) for e in case["ledger"] if e["outcome"] == "applied"]
    assert (NOTEBOOK_REF, "reclaim") in applied
    assert not [e for e in case["ledger"] if e["workload"] == TRAINING_REF]


def _idle_notebook_alert(case: Results, cluster: str) -> None:
    [idle] = _alerts(case, "GpuIdle", namespace=NOTEBOOK.namespace, node="node1", cluster=cluster)
    assert "first_firing" in idle


def exporter_flag(results: Results) -> None:
    case = results["flag"]
    _idle_notebook_alert(case, "prod-flag")
    _notebook_reclaimed_training_untouched(case)


def external_labels(results: Results) -> None:
    case = results["external"]
    _idle_notebook_alert(case, "prod-ext")
    _notebook_reclaimed_training_untouched(case)


def absent(results: Results) -> None:
    case = results["absent"]
    _idle_notebook_alert(case, "")
    _notebook_reclaimed_training_untouched(case)


def two_clusters_behind_one_endpoint(results: Results) -> None:
    """a's controller reclaims a's idle notebook; b's same-named train-llm is idle and
    alerting, and a's busy train-llm is left alone; b is never written to."""
    case = results["a"]
    _idle_notebook_alert(case, "a")
    _notebook_reclaimed_training_untouched(case)
    theirs = _alerts(case, "GpuIdle", cluster="b", namespace=TRAINING.namespace)
    assert len([a for a in theirs if "first_firing" in a]) == 2  # both pods, fired
    refused = {r["labels"]["pod"]: r for r in case["refused"] if r["labels"].get("cluster") == "b"}
    assert {p.pod for p in TRAINING.placements} <= set(refused)
    # b's exporters report b's cluster UID (its kube-system Namespace's): that decides.
    assert {r["kind"] for r in refused.values()} == {"foreign_cluster_uid"}
    assert all(
        r["labels"].get("cluster") == "a" or r["kind"] == "foreign_cluster_uid"
        for r in case["refused"]
    )
    assert case["misconfigured"] == []
    assert results["b_writes"] == []


def dead_exporter_holds_only_its_node(results: Results) -> None:
    """node2's exporter was killed early: GpuExporterDown names node2, and node1's
    notebook went through its whole ladder while it fired."""
    case = results["flag"]
    down = _alerts(case, "GpuExporterDown", reason="scrape_failing", node=DOOMED_NODE)
    assert down, case["alerts"]
    assert not _alerts(case, "GpuExporterDown", reason="scrape_failing", node="")
    reclaim = next(
        e["at"]
        for e in case["ledger"]
        if e["workload"] == NOTEBOOK_REF and e["step"] == "reclaim" and e["outcome"] == "applied"
    )
    assert any(a["first_firing"] < reclaim <= a["last_firing"] for a in down), (down, reclaim)
    assert not [e for e in case["ledger"] if "missing data is not idleness" in e["reason"]]
    on_node2 = {f"{w.namespace}/Deployment/{w.name}" for w in (TRAINING,)} | {
        "research/Deployment/eval-sweep"
    }
    assert not [e for e in case["ledger"] if e["workload"] in on_node2]


CASES: dict[str, Callable[[Results], None]] = {
    "cluster-from-exporter-flag": exporter_flag,
    "cluster-from-external-labels": external_labels,
    "cluster-absent": absent,
    "two-clusters-one-endpoint": two_clusters_behind_one_endpoint,
    "dead-exporter-holds-only-its-node": dead_exporter_holds_only_its_node,
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", CASES)
def test_deployment_matrix(case: str, results: Results) -> None:
    CASES[case](results)
