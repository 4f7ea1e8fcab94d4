"""The decision matrix, end to end: the shipped idle rules in the engine over a real
Prometheus holding our exporter's series, an enforcing policy, and the fake API with
workloads of every shape. Each row asserts the Kubernetes writes: a reclaim only where
every GPU of every pod of the workload is idle (docs/policies.md, "What counts as an
idle workload")."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.model.policies import NOTEBOOK_STOPPED
from testbed.feeds import with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

from .scenario import MINUTES, Controller, at, start_controller

NS = "ml"
BUSY = 0.8
COST = "controller.kubernetes.io/pod-deletion-cost"
POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle-gpus}
spec:
  mode: enforce
  alerts: {names: [GpuIdle]}
  ladder: {gracePeriod: 10m}
  warmup: 10m
  limits: {perCycle: 20, perNamespacePerHour: 50}  # every row may be reclaimed at once
"""


@dataclass(frozen=True)
class Row:
    """A workload: its kind, its pods (each a list of GPU utilizations), what must happen."""

    name: str
    kind: str
    pods: tuple[tuple[float, ...], ...]
    expect: str  # "reclaimed" or "untouched"
    right_size: str = ""  # with partial: rightSize, the idle pods it removes (by index)


ROWS = (
    Row("dep1-idle", "Deployment", ((0.0,),), "reclaimed"),
    Row("dep2-idle", "Deployment", ((0.0,), (0.0,)), "reclaimed"),
    Row("dep3-idle", "Deployment", ((0.0,), (0.0,), (0.0,)), "reclaimed"),
    Row("dep2-onebusy", "Deployment", ((0.0,), (BUSY,)), "untouched", "0"),
    Row("dep3-onebusy", "Deployment", ((0.0,), (BUSY,), (0.0,)), "untouched", "0,2"),
    Row("dep3-oneidle", "Deployment", ((BUSY,), (0.0,), (BUSY,)), "untouched", "1"),
    Row("sts-highidle", "StatefulSet", ((BUSY,), (0.0,)), "untouched", "1"),
    Row("sts-lowidle", "StatefulSet", ((0.0,), (BUSY,)), "untouched"),
    Row("sts-idle", "StatefulSet", ((0.0,), (0.0,)), "reclaimed"),
    Row("job2-onebusy", "Job", ((0.0,), (BUSY,)), "untouched"),
    Row("job2-idle", "Job", ((0.0,), (0.0,)), "reclaimed"),
    Row("cron-idle", "CronJob", ((0.0,),), "reclaimed"),
    Row("pod8-onebusy", "Deployment", ((0.0,) * 7 + (BUSY,),), "untouched"),
    Row("pod8-idle", "Deployment", ((0.0,) * 8,), "reclaimed"),
    Row("nb-idle", "Notebook", ((0.0,),), "reclaimed"),
    Row("hpa-idle", "HPA", ((0.0,),), "untouched"),  # hpa: refuse, the default
    # A replica added mid-grace: not idle evidence; a right-size keeps it.
    Row("grown-idle", "Deployment", ((0.0,),), "untouched", "0"),
    # Its pod recreated under the same name mid-grace: the alerts (no pod_uid) began
    # before the pod did, so they may be about the earlier one.
    Row("sts-recreated", "StatefulSet", ((0.0,),), "untouched"),
)


def pod_name(row: Row, i: int) -> str:
    return f"{row.name}-{i}" if row.kind in ("StatefulSet", "Notebook") else f"{row.name}-x-{i}"


def _gpus(row: Row) -> Iterator[tuple[str, str, float]]:
    """(pod, uuid, utilization) of every GPU of the row."""
    for i, utils in enumerate(row.pods):
        for j, util in enumerate(utils):
            yield pod_name(row, i), f"GPU-{row.name}-{i}-{j}", util


def metrics() -> str:
    node = {"cluster": "c1", "node": "n1", "job": "gpu-guardian-exporter"}
    samples: list[Sample] = []
    for minute in range(MINUTES):
        ts = at(minute)
        samples.append(Sample("guardian_exporter_nvml_up", node, ts, 1.0))
        samples.append(Sample("guardian_exporter_last_success_timestamp_seconds", node, ts, ts))
        for row in ROWS:
            for pod, uuid, util in _gpus(row):
                gpu = {"cluster": "c1", "node": "n1", "uuid": uuid, "gpu": uuid[-1]}
                samples.append(Sample("guardian_gpu_utilization_ratio", gpu, ts, util))
                alloc = {**gpu, "namespace": NS, "pod": pod, "container": "main", "gpu_group": "a"}
                samples.append(Sample("guardian_pod_gpu_allocated", alloc, ts, 1.0))
    return render_openmetrics(with_idle_facts(samples))  # each pod runs a process on its GPU


def owner(kube: FakeKubeAPI, row: Row) -> dict[str, Any]:
    """The object the row's pods are owned by (creating the root above it)."""
    n = len(row.pods)
    if row.kind == "StatefulSet":
        return kube.create(b.statefulset(row.name, NS, replicas=n))
    if row.kind == "Notebook":
        nb = kube.create(b.notebook(row.name, NS))
        return kube.create(b.statefulset(row.name, NS, owners=[b.owner_reference(nb)]))
    if row.kind == "Job":
        return kube.create(b.job(row.name, NS))
    if row.kind == "CronJob":
        cron = kube.create(b.cronjob(row.name, NS))
        return kube.create(b.job(f"{row.name}-1", NS, owners=[b.owner_reference(cron)]))
    dep = kube.create(b.deployment(row.name, NS, replicas=n))
    if row.kind == "HPA":
        kube.create(b.hpa(dep))
    return kube.create(b.replicaset(f"{row.name}-x", NS, owners=[b.owner_reference(dep)]))


def on_n1(_row: Row, _i: int) -> tuple[str, str]:
    return "n1", "nvidia.com/gpu"


def seed(
    kube: FakeKubeAPI,
    rows: Sequence[Row] = ROWS,
    place: Callable[[Row, int], tuple[str, str]] = on_n1,
) -> None:
    """The rows' owners and pods: pod ``i`` of ``row`` runs on the node ``place`` names
    and requests its GPUs as the resource it names."""
    kube.create(b.namespace(NS))
    for row in rows:
        parent = owner(kube, row)
        for i, utils in enumerate(row.pods):
            node, resource = place(row, i)
            pod = b.pod(pod_name(row, i), NS, node=node, owners=[b.owner_reference(parent)])
            pod["spec"]["containers"][0]["resources"] = {"limits": {resource: len(utils)}}
            kube.create(pod)


def root(row: Row) -> tuple[str, str]:
    kind = {"HPA": "Deployment"}.get(row.kind, row.kind)
    return kind, row.name


def _reclaimed(kube: FakeKubeAPI, row: Row) -> bool:
    kind, name = root(row)
    obj = kube.get(kind, name, NS)
    if kind in ("Job", "CronJob"):
        return bool(obj["spec"].get("suspend"))
    if kind == "Notebook":
        return NOTEBOOK_STOPPED in (obj["metadata"].get("annotations") or {})
    return bool(obj["spec"]["replicas"] == 0)


def right_sized(row: Row) -> str:
    """What a right-size of the row leaves: its count, and the idle pods marked to go."""
    if not row.right_size:
        return ""
    gone = [pod_name(row, int(i)) for i in row.right_size.split(",")]
    total = len(row.pods) + (1 if row.name == "grown-idle" else 0)
    return f"right-sized to {total - len(gone)}: {','.join(gone)}"


def outcome(kube: FakeKubeAPI, row: Row) -> str:
    if _reclaimed(kube, row):
        return "reclaimed"
    kind, name = root(row)
    marks = kube.get(kind, name, NS)["metadata"].get("annotations") or {}
    if "gpu-guardian.io/right-sized-to" not in marks:
        return "untouched"
    gone = marks["gpu-guardian.io/right-sized-pods"]
    costs = [
        (kube.get("Pod", pod, NS)["metadata"].get("annotations") or {}).get(COST)
        for pod in gone.split(",")
    ]
    replicas = kube.get(kind, name, NS)["spec"]["replicas"]
    assert str(replicas) == marks["gpu-guardian.io/right-sized-to"]
    # A ReplicaSet's idle pods go first by their cost; a StatefulSet's by ordinal.
    assert costs == [None if kind == "StatefulSet" else "-1"] * len(costs), (row.name, costs)
    return f"right-sized to {replicas}: {gone}"


def run_ladder(controller: Controller, kube: FakeKubeAPI, kube_clock: Any) -> None:
    """Minutes 40 to 61 of the ladder: the alerts fire at 45 (notified, then flagged).
    Mid-grace, grown-idle's owner adds a replica next to its pod (busy: no idle alert for
    it), and sts-recreated's pod is deleted and created again under its name."""
    controller.evaluate(range(40, 48))
    kube_clock.now = datetime.fromtimestamp(at(48), tz=UTC)
    kube.patch("Deployment", "grown-idle", {"spec": {"replicas": 2}}, NS)
    rs = kube.get("ReplicaSet", "grown-idle-x", NS)
    node = kube.get("Pod", "grown-idle-x-0", NS)["spec"]["nodeName"]
    kube.create(b.pod("grown-idle-x-new", NS, node=node, owners=[b.owner_reference(rs)]))
    old = kube.delete("Pod", "sts-recreated-0", NS)
    meta = {k: old["metadata"][k] for k in ("name", "namespace", "ownerReferences")}
    kube.create({**old, "metadata": meta})
    controller.evaluate(range(48, 62))


def partly_idle_events(kube: FakeKubeAPI) -> dict[str, str]:
    """The GPUPartlyIdle Events: the workload's name, the message."""
    return {
        e["involvedObject"]["name"]: e["message"]
        for e in kube.objects("Event", NS)
        if e.get("reason") == "GPUPartlyIdle"
    }


PARTLY_IDLE = {
    "dep2-onebusy", "dep3-onebusy", "dep3-oneidle", "sts-highidle", "sts-lowidle",
    "job2-onebusy", "pod8-onebusy", "grown-idle",
}  # fmt: skip


def check_notify_writes(
    controller: Controller, kube: FakeKubeAPI, rows: Sequence[Row], partly_idle: set[str]
) -> None:
    """With partial: notify, what besides the reclaims the ladder wrote: a GPUPartlyIdle
    Event on exactly the ``partly_idle`` rows, naming the parts, and no other change."""
    events = partly_idle_events(kube)
    assert set(events) == partly_idle
    assert "1 of 2 pods idle" in events["dep2-onebusy"]
    assert "not idle: dep2-onebusy-x-1 (busy or unknown: no idle alert)" in events["dep2-onebusy"]
    assert "pod8-onebusy-x-0 (7 of its 8 GPUs idle)" in events["pod8-onebusy"]
    assert "grown-idle-x-new (busy or unknown: no idle alert)" in events["grown-idle"]
    reasons = "\n".join(e.reason for e in controller.parts.ledger.all_events())
    assert (
        "not idle: sts-recreated-0 (created 2023-11-14T23:01:20Z, after its alerts began)"
        in reasons
    )
    assert "HorizontalPodAutoscaler hpa-idle scales it" in reasons
    # Nothing but the reclaims touched a replica count or a suspend flag.
    for row in rows:
        if row.expect == "untouched" and row.kind in ("Deployment", "StatefulSet", "HPA"):
            want = 2 if row.name == "grown-idle" else len(row.pods)
            assert kube.get(*root(row), NS)["spec"]["replicas"] == want, row.name


@pytest.fixture(params=["notify", "rightSize"])
def partial(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def controller(
    prometheus: Any, kube: FakeKubeAPI, tmp_path: Path, partial: str
) -> Iterator[Controller]:
    prom = prometheus(openmetrics=metrics())
    seed(kube)
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICY + f"  partial: {partial}\n", encoding="utf-8")
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    ctl = start_controller(prom.url, kubeconfig, tmp_path / "state.db", policies)
    try:
        yield ctl
    finally:
        ctl.close()


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_every_shape_gets_exactly_the_writes_its_evidence_allows(
    controller: Controller, kube: FakeKubeAPI, kube_clock: Any, partial: str
) -> None:
    run_ladder(controller, kube, kube_clock)

    got = {row.name: outcome(kube, row) for row in ROWS}
    if partial == "rightSize":
        assert got == {row.name: right_sized(row) or row.expect for row in ROWS}
        return
    assert got == {row.name: row.expect for row in ROWS}

    check_notify_writes(controller, kube, ROWS, PARTLY_IDLE)
