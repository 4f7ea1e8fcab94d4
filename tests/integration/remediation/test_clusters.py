"""Two clusters behind one query endpoint (a Thanos holding both), one controller per
cluster: issue #13, item 2.

Both clusters run ``ml/busy-serve`` with a pod ``busy-serve-abc-1`` on a node ``n1``.
In cluster ``b`` that pod is idle; in cluster ``a`` it is busy. Cluster ``a`` also has
an idle ``ml/idle-train``. The controller of ``a`` reads the shared history and
cluster ``a``'s API only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import Ledger
from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.app.remediation.status import build_status
from guardian.engine.remediation import PlannerSettings
from guardian.model.alerts import EvaluationHealth, GroupEvaluation, RuleOutcome
from guardian.model.labels import LabelSet
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import WorkloadRef
from testbed.feeds import with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

from .scenario import POLICY, T0, Controller, at, start_controller

pytestmark = pytest.mark.e2e

MINUTES = 70
NOW = T0 + 86_400 * 2  # the fake cluster's objects were created a day before T0
# (cluster, namespace, workload, pod, node, uuid, utilization)
GPUS = [
    ("a", "ml", "busy-serve", "busy-serve-abc-1", "n1", "GPU-a1", 0.8),
    ("a", "ml", "idle-train", "idle-train-abc-1", "n1", "GPU-a2", 0.0),
    ("b", "ml", "busy-serve", "busy-serve-abc-1", "n1", "GPU-b1", 0.0),
]
BUSY = WorkloadRef("apps/v1", "Deployment", "ml", "busy-serve")
IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")


def two_clusters(
    *,
    pod_uids: dict[str, str] | None = None,
    unlabelled: frozenset[str] = frozenset(),
    cluster_uids: dict[str, str] | None = None,
) -> str:
    """The history a Thanos with external label ``cluster`` holds for both clusters
    (``unlabelled``: clusters whose Prometheus sets no such label; ``cluster_uids``: the
    UID each cluster's exporter reports, none by default, as from dcgm-exporter)."""

    def named(labels: dict[str, str]) -> dict[str, str]:
        drop = labels["cluster"] in unlabelled
        return {k: v for k, v in labels.items() if k != "cluster" or not drop}

    samples: list[Sample] = []
    for i in range(MINUTES):
        ts = at(i)
        for cluster in ("a", "b"):
            target = named(
                {"cluster": cluster, "job": "gpu-guardian-exporter", "instance": "x:9835"}
            )
            samples.append(Sample("up", target, ts, 1.0))
            node = {**target, "node": "n1"}
            samples.append(Sample("guardian_exporter_nvml_up", node, ts, 1.0))
            samples.append(Sample("guardian_exporter_last_success_timestamp_seconds", node, ts, ts))
            if cluster in (cluster_uids or {}):
                info = {**node, "cluster_uid": (cluster_uids or {})[cluster]}
                samples.append(Sample("guardian_exporter_cluster_info", info, ts, 1.0))
        for cluster, ns, _workload, pod, node_name, uuid, util in GPUS:
            gpu = named({"cluster": cluster, "node": node_name, "uuid": uuid, "gpu": "0"})
            samples.append(Sample("guardian_gpu_utilization_ratio", gpu, ts, util))
            alloc = {**gpu, "namespace": ns, "pod": pod, "container": "main", "gpu_group": "g"}
            uid = (pod_uids or {}).get(f"{cluster}/{pod}")
            if uid:
                alloc["pod_uid"] = uid
            samples.append(Sample("guardian_pod_gpu_allocated", alloc, ts, 1.0))
    return render_openmetrics(with_idle_facts(samples))  # each pod runs a process on its GPU


def seed_cluster_a(kube: FakeKubeAPI) -> dict[str, str]:
    """Cluster ``a``'s workloads; returns each pod's UID."""
    uids = {}
    for cluster, ns, workload, pod, node, _uuid, _util in GPUS:
        if cluster != "a":
            continue
        dep = kube.create(b.deployment(workload, ns, replicas=3))
        rs = kube.create(b.replicaset(f"{workload}-abc", ns, owners=[b.owner_reference(dep)]))
        created = kube.create(b.pod(pod, ns, node=node, owners=[b.owner_reference(rs)]))
        uids[pod] = created["metadata"]["uid"]
    return uids


@dataclass
class Stage:
    """Cluster a's API, a fresh Prometheus per history; every controller closed at the end."""

    prometheus: Any
    kube: FakeKubeAPI
    tmp_path: Path
    uids: dict[str, str]
    started: list[Controller] = field(default_factory=list)

    def controller(self, history: str, **settings: Any) -> Controller:
        prom = self.prometheus(openmetrics=history)
        policies = self.tmp_path / "policies.yaml"
        policies.write_text(POLICY, encoding="utf-8")
        kubeconfig = self.kube.write_kubeconfig(self.tmp_path / "kubeconfig")
        state = self.tmp_path / "state.db"
        ctl = start_controller(prom.url, kubeconfig, state, policies, **settings)
        self.started.append(ctl)
        return ctl


@pytest.fixture
def stage(prometheus: Any, kube: FakeKubeAPI, tmp_path: Path) -> Iterator[Stage]:
    staged = Stage(prometheus, kube, tmp_path, seed_cluster_a(kube))
    try:
        yield staged
    finally:
        for ctl in staged.started:
            ctl.close()


def replicas(kube: FakeKubeAPI, ref: WorkloadRef) -> int:
    return int(kube.get(ref.kind, ref.name, ref.namespace)["spec"]["replicas"])


def run_ladder(ctl: Controller) -> None:
    """Past GpuIdle's 35 minutes, the 10-minute warm-up and the 10-minute grace."""
    ctl.evaluate(range(40, 62))


@pytest.mark.timeout(180)
def test_cluster_b_idleness_never_scales_cluster_a(stage: Stage, kube: FakeKubeAPI) -> None:
    """The reported failure: no cluster configured, cluster b's idle busy-serve-abc-1
    made the controller scale cluster a's busy ml/busy-serve from 3 to 0. Now a
    controller that does not know its cluster refuses every alert of a source that
    serves two, and says why."""
    ctl = stage.controller(two_clusters())
    ledger = ctl.parts.ledger
    run_ladder(ctl)

    assert replicas(kube, BUSY) == 3
    assert replicas(kube, IDLE) == 3  # its cluster is not known either: nothing acts
    assert not kube.requests(verb="patch")
    report = build_status(ledger)
    refused = {(r["labels"]["cluster"], r["labels"]["pod"]): r for r in report.refused}
    assert set(refused) == {("a", "idle-train-abc-1"), ("b", "busy-serve-abc-1")}
    assert "serves clusters a, b" in refused[("b", "busy-serve-abc-1")]["reason"]
    assert "remediation.cluster" in refused[("b", "busy-serve-abc-1")]["reason"]


@pytest.mark.timeout(180)
def test_an_unlabelled_cluster_beside_a_labelled_one_is_a_cluster_too(
    stage: Stage, kube: FakeKubeAPI
) -> None:
    """Issue #28: cluster a unlabelled (external_labels on b only), the same names in
    both, no cluster configured: a's busy Deployment was scaled 3 -> 0 on b's idle alert,
    as the unlabelled cluster was not counted. Now the source serves two clusters."""
    ctl = stage.controller(two_clusters(unlabelled=frozenset({"a"})))
    run_ladder(ctl)

    assert replicas(kube, BUSY) == 3
    assert replicas(kube, IDLE) == 3
    assert not kube.requests(verb="patch")
    refused = {
        (r["labels"].get("cluster", ""), r["labels"]["pod"]): r
        for r in build_status(ctl.parts.ledger).refused
    }
    assert set(refused) == {("", "idle-train-abc-1"), ("b", "busy-serve-abc-1")}
    reason = refused[("b", "busy-serve-abc-1")]["reason"]
    assert "serves clusters (series without a cluster label), b" in reason
    assert "remediation.cluster" in reason


@pytest.mark.timeout(180)
def test_controller_of_a_reclaims_a_and_refuses_b(stage: Stage, kube: FakeKubeAPI) -> None:
    ctl = stage.controller(two_clusters(), cluster="a")
    ledger = ctl.parts.ledger
    metrics = ctl.parts.metrics
    run_ladder(ctl)

    assert replicas(kube, IDLE) == 0
    assert replicas(kube, BUSY) == 3
    assert not [r for r in kube.requests(verb="patch") if "busy-serve" in r.path]
    assert [e for e in ledger.all_events() if e.workload == BUSY] == []
    report = build_status(ledger)
    [foreign] = report.refused
    assert foreign["labels"]["cluster"] == "b"
    assert foreign["kind"] == "foreign_cluster"
    assert "about cluster b; this controller acts on cluster a" in foreign["reason"]
    assert metrics.refused_alerts.labels("foreign_cluster")._value.get() == 1
    text = report.render()
    assert "Alerts refused by the last cycle (1):" in text
    assert "foreign_cluster: the alert is about cluster b" in text


@pytest.mark.timeout(180)
def test_a_controller_misnamed_as_b_acts_on_a_by_uid_and_says_so(
    stage: Stage, kube: FakeKubeAPI
) -> None:
    """Issue #28: cluster a's controller configured with cluster b's name. Without UIDs it
    would take b's idle busy-serve-abc-1 for its own; with them it acts on a's alerts (its
    exporters report a's kube-system UID), refuses b's and reports the misconfiguration."""
    ours = kube.get("Namespace", "kube-system")["metadata"]["uid"]
    theirs = "0d4c1b2a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
    history = two_clusters(cluster_uids={"a": ours, "b": theirs})
    ctl = stage.controller(history, cluster="b")
    run_ladder(ctl)

    assert replicas(kube, IDLE) == 0
    assert replicas(kube, BUSY) == 3
    report = build_status(ctl.parts.ledger)
    [foreign] = report.refused
    assert (foreign["labels"]["cluster"], foreign["kind"]) == ("b", "foreign_cluster_uid")
    assert f"reports cluster UID {theirs}" in foreign["reason"]
    assert len(report.misconfigured) == 2
    assert "Cluster misconfiguration (2):" in report.render()
    assert ctl.parts.metrics.cluster_misconfigured._value.get() == 1


@pytest.mark.timeout(180)
def test_a_replaced_pod_is_not_the_pod_that_was_idle(stage: Stage, kube: FakeKubeAPI) -> None:
    """Cluster a's idle-train-abc-1 was deleted and recreated under the same name (new
    UID) after the evidence was gathered: the alert's pod_uid no longer matches."""
    history = two_clusters(pod_uids={"a/idle-train-abc-1": "uid-of-the-old-pod"})
    ctl = stage.controller(history, cluster="a")
    ledger = ctl.parts.ledger
    run_ladder(ctl)

    assert replicas(kube, IDLE) == 3
    assert [e for e in ledger.all_events() if e.workload == IDLE] == []
    refused = [r for r in build_status(ledger).refused if r["labels"]["pod"] == "idle-train-abc-1"]
    assert refused, build_status(ledger).refused
    assert "uid-of-the-old-pod" in refused[0]["reason"]
    assert stage.uids["idle-train-abc-1"] in refused[0]["reason"]


class ReplacesThePod:
    """A reader that, when the loop reads the workload again just before its step,
    first lets the pod be replaced by a same-named one on another node (new UID)."""

    def __init__(self, kube: FakeKubeAPI, inner: KubeReader) -> None:
        self.kube = kube
        self.inner = inner
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def workload(self, ref: WorkloadRef, *args: Any) -> Any:
        self.reads += 1
        if self.reads == 1:  # the cycle's snapshot reads through the inner reader
            old = self.kube.get("Pod", "train-1", "ml")
            self.kube.delete("Pod", "train-1", "ml")
            owners = old["metadata"]["ownerReferences"]
            self.kube.create(b.pod("train-1", "ml", node="n2", owners=owners))
        return self.inner.workload(ref, *args)


def test_the_recheck_before_a_step_reads_the_pod_again(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-x", "ml", owners=[b.owner_reference(dep)]))
    pod = kube.create(b.pod("train-1", "ml", node="n1", owners=[b.owner_reference(rs)]))
    labels = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": "train-1", "node": "n1", "pod_uid": pod["metadata"]["uid"]}  # fmt: skip
    idle = FiringAlert(LabelSet(labels), NOW - 3600, True, group="idle")
    loop = RemediationLoop(
        parse_policies(POLICY, "p.yaml"),
        LoopParts(
            ReplacesThePod(kube, reader),  # type: ignore[arg-type]
            executor,
            Ledger.open(str(tmp_path / "state.db")),
        ),
        LoopSource(lambda: [idle]),
        LoopSettings(PlannerSettings(dry_run=False), "gpu-guardian"),
    )
    evaluation = GroupEvaluation(
        "idle", "r.yaml", NOW, (RuleOutcome("GpuIdle", EvaluationHealth.OK),), ()
    )
    loop.on_evaluation(evaluation)  # notify was planned on the old pod; re-checked on the new

    assert loop.ledger.all_events() == []
    assert not kube.requests(verb="patch")
    loop.on_evaluation(dataclasses.replace(evaluation, ts=NOW + 60))
    assert loop.metrics.refused_alerts.labels("pod_mismatch")._value.get() == 1
    assert loop.ledger.all_events() == []
