"""The pods a root owns now, read through the real client from the fake API: the whole
that a reclaim's evidence must cover (engine/remediation/evidence.py)."""

from __future__ import annotations

from typing import Any

from guardian.adapters.kube.reader import KubeReader
from guardian.model.remediation_events import WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

TRAIN = WorkloadRef("apps/v1", "Deployment", "ml", "train")


def _deployment_with_pods(kube: FakeKubeAPI) -> dict[str, Any]:
    kube.create(b.namespace("ml"))
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    old = kube.create(b.replicaset("train-old", "ml", owners=[b.owner_reference(dep)]))
    new = kube.create(b.replicaset("train-new", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-old-1", "ml", node="n1", owners=[b.owner_reference(old)]))
    kube.create(b.pod("train-new-1", "ml", node="n2", owners=[b.owner_reference(new)], gpus=8))
    kube.create(b.pod("train-new-2", "ml", phase="Pending", owners=[b.owner_reference(new)]))
    kube.create(b.pod("train-done", "ml", phase="Succeeded", owners=[b.owner_reference(new)]))
    kube.create(b.pod("train-cpu", "ml", owners=[b.owner_reference(new)], gpus=0))
    # Not its pods: another root's, a bare pod, the same name in another namespace.
    other = kube.create(b.deployment("serve", "ml"))
    rs = kube.create(b.replicaset("serve-1", "ml", owners=[b.owner_reference(other)]))
    kube.create(b.pod("serve-1-a", "ml", owners=[b.owner_reference(rs)]))
    kube.create(b.pod("bare", "ml"))
    kube.create(b.namespace("other"))
    kube.create(b.pod("train-old-1", "other"))
    return dep


def test_every_gpu_pod_under_the_root_and_no_other(kube: FakeKubeAPI, reader: KubeReader) -> None:
    _deployment_with_pods(kube)

    ws = reader.with_members(reader.workload(TRAIN))

    assert ws.members is not None
    got = {m.name: (m.phase, m.node, dict(m.gpus)) for m in ws.members}
    assert got == {
        "train-old-1": ("Running", "n1", {"nvidia.com/gpu": 1}),
        "train-new-1": ("Running", "n2", {"nvidia.com/gpu": 8}),
        "train-new-2": ("Pending", "", {"nvidia.com/gpu": 1}),
        "train-done": ("Succeeded", "", {"nvidia.com/gpu": 1}),
    }
    assert all(m.uid and m.created_at > 0 for m in ws.members)


def test_one_pod_list_per_namespace_in_a_snapshot(kube: FakeKubeAPI, reader: KubeReader) -> None:
    _deployment_with_pods(kube)
    before = len(kube.requests(verb="list"))

    snap = reader.snapshot([("ml", "train-old-1"), ("ml", "serve-1-a")], (), "gpu-guardian")

    lists = [r.path for r in kube.requests(verb="list")[before:] if r.path.endswith("/pods")]
    assert lists == ["/api/v1/namespaces/ml/pods"]
    serve = snap.workloads[WorkloadRef("apps/v1", "Deployment", "ml", "serve")]
    assert [m.name for m in serve.members or ()] == ["serve-1-a"]


def test_a_bare_pod_is_its_own_whole(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.namespace("ml"))
    kube.create(b.pod("bare", "ml", node="n1"))

    ws = reader.with_members(reader.workload(WorkloadRef("v1", "Pod", "ml", "bare")))

    assert [m.name for m in ws.members or ()] == ["bare"]


def test_a_cronjobs_pods_through_its_jobs(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.namespace("ml"))
    cron = kube.create(b.cronjob("nightly", "ml"))
    job = kube.create(b.job("nightly-1", "ml", owners=[b.owner_reference(cron)]))
    kube.create(b.pod("nightly-1-a", "ml", owners=[b.owner_reference(job)]))
    kube.create(b.pod("nightly-1-b", "ml", owners=[b.owner_reference(job)]))

    ws = reader.with_members(reader.workload(WorkloadRef("batch/v1", "CronJob", "ml", "nightly")))

    assert sorted(m.name for m in ws.members or ()) == ["nightly-1-a", "nightly-1-b"]


def test_a_pod_whose_owner_is_gone_is_not_a_member(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.namespace("ml"))
    dep = kube.create(b.deployment("train", "ml"))
    rs = kube.create(b.replicaset("train-1", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-1-a", "ml", owners=[b.owner_reference(rs)]))
    orphan_owner = b.replicaset("train-gone", "ml", owners=[b.owner_reference(dep)])
    orphan_owner["metadata"]["uid"] = "gone"
    kube.create(b.pod("train-gone-a", "ml", owners=[b.owner_reference(orphan_owner)]))

    ws = reader.with_members(reader.workload(TRAIN))

    assert [m.name for m in ws.members or ()] == ["train-1-a"]


def test_pods_that_cannot_be_listed_are_unknown_not_none(
    kube: FakeKubeAPI, reader: KubeReader
) -> None:
    _deployment_with_pods(kube)
    kube.fail_next(500, verb="list", path="/api/v1/namespaces/ml/pods", times=None)

    ws = reader.with_members(reader.workload(TRAIN))

    assert ws.members is None  # the planner then holds: evidence cannot be shown whole


def test_a_read_that_decides_nothing_lists_no_pods(kube: FakeKubeAPI, reader: KubeReader) -> None:
    # A restore, a button or a status reads the root alone; only a decision to act
    # (the snapshot, the re-check before a step, Reclaim now) needs its pods.
    _deployment_with_pods(kube)
    before = len(kube.requests(verb="list"))

    ws = reader.workload(TRAIN)

    assert ws.members is None
    assert [r.path for r in kube.requests(verb="list")[before:] if r.path.endswith("/pods")] == []
