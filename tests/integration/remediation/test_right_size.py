"""``partial: rightSize`` against the fake API: the idle replicas get the lowest
pod-deletion-cost, the Deployment is scaled to its busy count in one conditional write,
the ReplicaSet controller's own ranking (testbed/kubeapi/replicaset.py) then removes
exactly the idle pods, and a restore brings the original count back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.app.remediation.restore import restore_workload
from guardian.engine.remediation import PlannerSettings
from guardian.model.alerts import EvaluationHealth, GroupEvaluation, RuleOutcome
from guardian.model.labels import LabelSet
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.kubeapi.replicaset import scale_down

NOW = 1_700_000_000.0
SERVE = WorkloadRef("apps/v1", "Deployment", "ml", "serve")
POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle}
spec:
  mode: enforce
  ladder: {gracePeriod: 2m, annotate: false}
  warmup: 1m
  partial: PARTIAL
"""
COST = "controller.kubernetes.io/pod-deletion-cost"


def idle(pod: str, node: str) -> FiringAlert:
    labels = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": pod, "node": node, "cluster": "c1"}  # fmt: skip
    return FiringAlert(LabelSet(labels), NOW - 3600, True, group="idle")


def loop_on(
    reader: KubeReader, executor: Executor, tmp_path: Path, alerts: list[FiringAlert], partial: str
) -> tuple[Any, Ledger]:
    ledger = Ledger.open(str(tmp_path / "state.db"))
    loop = RemediationLoop(
        parse_policies(POLICY.replace("PARTIAL", partial), "p.yaml"),
        LoopParts(reader, executor, ledger),
        LoopSource(lambda: alerts),
        LoopSettings(PlannerSettings(dry_run=False), "gpu-guardian", 60),
    )
    return loop, ledger


def run(loop: Any, *minutes: int) -> None:
    for minute in minutes:
        ok = RuleOutcome("GpuIdle", EvaluationHealth.OK)
        loop.on_evaluation(GroupEvaluation("idle", "r.yaml", NOW + minute * 60, (ok,), ()))


def three_replicas(kube: FakeKubeAPI, **costs: str) -> None:
    dep = kube.create(b.deployment("serve", "ml", replicas=3))
    rs = kube.create(b.replicaset("serve-1", "ml", owners=[b.owner_reference(dep)]))
    for pod, node in (("serve-1-a", "n1"), ("serve-1-b", "n2"), ("serve-1-c", "n3")):
        annotations = {COST: costs[pod[-1]]} if pod[-1] in costs else None
        owners = [b.owner_reference(rs)]
        kube.create(b.pod(pod, "ml", node=node, owners=owners, annotations=annotations))


def pods(kube: FakeKubeAPI) -> list[str]:
    return sorted(p["metadata"]["name"] for p in kube.objects("Pod", "ml"))


@pytest.mark.parametrize("costs", [{}, {"a": "-7"}], ids=["no costs", "a kept pod with cost -7"])
def test_right_size_removes_exactly_the_idle_replica_and_restore_brings_it_back(
    kube: FakeKubeAPI,
    reader: KubeReader,
    executor: Executor,
    tmp_path: Path,
    costs: dict[str, str],
) -> None:
    three_replicas(kube, **costs)
    loop, ledger = loop_on(reader, executor, tmp_path, [idle("serve-1-b", "n2")], "rightSize")
    run(loop, 0, 1, 2)  # notified; the right-size after the 2m grace period
    dep = kube.get("Deployment", "serve", "ml")
    assert dep["spec"]["replicas"] == 2
    marks = dep["metadata"]["annotations"]
    assert marks["gpu-guardian.io/original-replicas"] == "3"
    assert marks["gpu-guardian.io/right-sized-to"] == "2"
    assert marks["gpu-guardian.io/right-sized-pods"] == "serve-1-b"
    expected = str(min(-1, int(costs.get("a", "0")) - 1))
    assert kube.get("Pod", "serve-1-b", "ml")["metadata"]["annotations"][COST] == expected
    applied = [e for e in ledger.all_events() if e.outcome is StepOutcome.APPLIED]
    [reclaim] = [e for e in applied if e.step is LadderStep.RECLAIM]
    assert "right-size Deployment serve from 3 to 2, removing its idle pods serve-1-b" in (
        reclaim.reason
    )
    # The ReplicaSet controller's part, by its own ranking: exactly the idle pod goes.
    assert scale_down(kube, "ml", "serve-1", 2) == ["serve-1-b"]
    assert pods(kube) == ["serve-1-a", "serve-1-c"]
    run(loop, 3)  # nothing more: right-sized, waiting for a restore
    assert kube.get("Deployment", "serve", "ml")["spec"]["replicas"] == 2

    restore_workload(SERVE, reader, loop.steps, NOW + 240)
    dep = kube.get("Deployment", "serve", "ml")
    assert dep["spec"]["replicas"] == 3
    assert not any(
        k.startswith("gpu-guardian.io/right-sized") for k in dep["metadata"]["annotations"]
    )


def test_partial_notify_writes_nothing(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    three_replicas(kube)
    loop, ledger = loop_on(reader, executor, tmp_path, [idle("serve-1-b", "n2")], "notify")
    run(loop, 0, 1, 2, 3)
    assert kube.get("Deployment", "serve", "ml")["spec"]["replicas"] == 3
    assert COST not in (kube.get("Pod", "serve-1-b", "ml")["metadata"].get("annotations") or {})
    held = [e.reason for e in ledger.all_events() if e.hold is HoldKind.EVIDENCE]
    said = (
        "partly idle, not reclaimed (1 of 3 pods idle; idle: serve-1-b (GPU idle); not idle: "
        "serve-1-a (busy or unknown: no idle alert), serve-1-c (busy or unknown: no idle alert))"
    )
    assert held == [said]  # said once


def test_a_right_size_that_removed_others_is_said(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    # The controller's ranking went another way (here: a kept pod turned not Ready just
    # before the scale-down): the idle pod still runs, and the ladder says so.
    three_replicas(kube)
    loop, ledger = loop_on(reader, executor, tmp_path, [idle("serve-1-b", "n2")], "rightSize")
    run(loop, 0, 1, 2)
    kube.patch(
        "Pod", "serve-1-c", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "ml"
    )
    assert scale_down(kube, "ml", "serve-1", 2) == ["serve-1-c"]
    run(loop, 3)
    last = [e for e in ledger.all_events() if e.outcome is StepOutcome.REFUSED][-1]
    assert "its idle pods serve-1-b still run: the scale-down removed others" in last.reason
