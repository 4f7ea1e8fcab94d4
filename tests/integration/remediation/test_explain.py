"""``guardian explain`` from the loop: the planner's own trace for one workload (every
gate it asked, in order, with its answer), its decision, and the ledger's history, for a
reclaimed, a held (grace), a partly idle and an excluded workload; ``at`` answers from
the ledger alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.explain import explain, history_answer, render
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.engine.remediation import PlannerSettings
from guardian.model.alerts import EvaluationHealth, GroupEvaluation, RuleOutcome
from guardian.model.labels import LabelSet
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import FiringAlert
from guardian.model.times import rfc3339
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

NOW = 1_700_000_000.0
POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle}
spec:
  mode: enforce
  ladder: {gracePeriod: 2m, annotate: false}
  warmup: 1m
"""


def idle(pod: str, active_at: float = NOW - 3600) -> FiringAlert:
    labels = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": pod, "node": "n1", "cluster": "c1"}  # fmt: skip
    return FiringAlert(LabelSet(labels), active_at, True, group="idle", value=0.0)


def deployment(kube: FakeKubeAPI, name: str, replicas: int = 1, **meta: Any) -> None:
    dep = kube.create(b.deployment(name, "ml", replicas=replicas, **meta))
    rs = kube.create(b.replicaset(f"{name}-1", "ml", owners=[b.owner_reference(dep)]))
    for i in range(replicas):
        kube.create(b.pod(f"{name}-1-{i}", "ml", node="n1", owners=[b.owner_reference(rs)]))


@pytest.fixture
def loop(kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path) -> Any:
    deployment(kube, "done")  # idle: reclaimed at minute 2
    deployment(kube, "split", replicas=2)  # one of two idle
    deployment(kube, "kept", annotations={"gpu-guardian.io/exclude": "true"})
    deployment(kube, "young")  # notified at minute 2: in its grace period after
    alerts = [idle("done-1-0"), idle("split-1-0"), idle("kept-1-0")]
    ledger = Ledger.open(str(tmp_path / "state.db"))
    loop = RemediationLoop(
        parse_policies(POLICY, "p.yaml"),
        LoopParts(reader, executor, ledger),
        LoopSource(lambda: alerts),
        LoopSettings(PlannerSettings(dry_run=False), "gpu-guardian", 60),
    )
    for minute in (0, 1, 2):
        if minute == 2:
            alerts.append(idle("young-1-0"))
        ok = RuleOutcome("GpuIdle", EvaluationHealth.OK)
        loop.on_evaluation(GroupEvaluation("idle", "r.yaml", NOW + minute * 60, (ok,), ()))
    return loop


def gates(answer: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(c["gate"], c["passed"]) for c in answer["checks"]]


OK = [("policy", True), ("exclusions", True), ("evidence health", True), ("silences", True),
      ("warm-up", True), ("kill switch", True)]  # fmt: skip


def test_a_held_workload_in_its_grace_period(loop: Any) -> None:
    answer = explain(loop, "ml/Deployment/young", NOW + 150)
    assert gates(answer) == [*OK, ("grace period", False)]
    assert answer["outcome"]["waiting_for"] == "grace"
    assert answer["outcome"]["due"] == rfc3339(NOW + 240)
    assert [h["step"] for h in answer["history"]] == ["notify"]
    assert "Gates, in the planner's order:" in render(answer)


def test_a_partly_idle_workload(loop: Any) -> None:
    answer = explain(loop, "ml/deployment/split", NOW + 180)  # kind as kubectl takes it
    assert gates(answer)[-1] == ("whole workload", False)
    assert ("grace period", True) in gates(answer)
    assert answer["outcome"]["decision"] == "refused"
    assert answer["outcome"]["reason"].startswith("partly idle, not reclaimed (1 of 2 pods idle")
    assert [p["name"] for p in answer["pods"]] == ["split-1-0", "split-1-1"]
    assert [a["pod"] for a in answer["alerts"]] == ["split-1-0"]


def test_an_excluded_workload(loop: Any) -> None:
    answer = explain(loop, "ml/Deployment/kept", NOW + 180)
    assert gates(answer) == [("policy", True), ("exclusions", False)]
    assert "exclude" in answer["checks"][-1]["detail"]


def test_a_reclaimed_workload_and_the_decision_at_a_past_time(loop: Any) -> None:
    answer = explain(loop, "ml/Deployment/done", NOW + 180)
    assert answer["outcome"]["reason"] == "already reclaimed; waiting for a restore"
    assert answer["episode"] is None  # no shared state in this loop: the ledger says it
    steps = [(h["step"], h["outcome"]) for h in answer["history"]]
    assert steps[0] == ("notify", "applied")
    assert steps[-1] == ("reclaim", "applied")
    before = explain(loop, "ml/Deployment/done", NOW + 180, at=NOW + 60)
    # At minute 1 it had been notified and waited for its grace period.
    decided = before["decision"]
    assert (decided["step"], decided["outcome"]) == ("reclaim", "planned")
    assert decided["reason"].startswith("grace period: reclaim due at")
    same = history_answer(loop.ledger, "ml/Deployment/done", NOW + 60)
    assert same["decision"] == before["decision"]
