"""The executor and the reader against the fake API server, through the real client."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import Conflict, Forbidden, KubeRest, NotFound, Unavailable
from guardian.model.labels import LabelSet
from guardian.model.policies import NOTEBOOK_STOPPED, Annotations
from guardian.model.reclaim import ActionKind, PlannedAction
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian_common.errors import PermanentError, TransientError
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from tests.plugins.kube_fixture import LWS

NOW = 1_700_000_000.0
DEPLOY = WorkloadRef("apps/v1", "Deployment", "ml", "train")


def action(step: LadderStep, ref: WorkloadRef = DEPLOY, **extra: Any) -> PlannedAction:
    fields: dict[str, Any] = {
        "workload": ref,
        "step": step,
        "policy": "idle",
        "episode": "ep1",
        "reason": "GpuIdle firing",
        "dry_run": False,
        "alert_labels": LabelSet({"alertname": "GpuIdle"}),
    }
    fields.update(extra)
    return PlannedAction(**fields)


def seed_deployment(kube: FakeKubeAPI, replicas: int = 3) -> dict[str, Any]:
    dep = kube.create(b.deployment("train", "ml", replicas=replicas))
    rs = kube.create(b.replicaset("train-abc", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-abc-1", "ml", node="n1", owners=[b.owner_reference(rs)]))
    kube.create(b.pod("train-abc-2", "ml", node="n1", owners=[b.owner_reference(rs)]))
    return dep


def test_pods_resolve_to_their_deployment_once(kube: FakeKubeAPI, reader: KubeReader) -> None:
    seed_deployment(kube)
    snap = reader.snapshot([("ml", "train-abc-1"), ("ml", "train-abc-2")], [], "gpu-guardian")
    assert {o.root for o in snap.pod_owners.values()} == {DEPLOY}
    ws = snap.workloads[DEPLOY]
    assert (ws.action, ws.replicas, ws.pods) == (
        ActionKind.SCALE,
        3,
        ("train-abc-1", "train-abc-2"),
    )
    assert set(snap.namespaces) == {"ml", "gpu-guardian"}


def test_reclaim_is_one_conditional_merge_patch(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    seed_deployment(kube)
    ws = reader.workload(DEPLOY)
    kube.clear_requests()
    result = executor.apply(action(LadderStep.RECLAIM), ws, NOW)
    assert result.outcome is StepOutcome.APPLIED
    patches = kube.requests(verb="patch", path="/deployments/train$")
    assert len(patches) == 1
    patch = patches[0]
    assert patch.content_type == "application/merge-patch+json"
    assert patch.query["fieldManager"] == "gpu-guardian"
    assert patch.body["metadata"]["resourceVersion"] == ws.resource_version
    assert patch.body["spec"] == {"replicas": 0}
    obj = kube.get("Deployment", "train", "ml")
    ann = obj["metadata"]["annotations"]
    assert obj["spec"]["replicas"] == 0
    assert ann[Annotations.ORIGINAL_REPLICAS] == "3"
    assert ann[Annotations.RECLAIMED_BY] == "idle"
    assert ann[Annotations.RECLAIMED_AT] == "2023-11-14T22:13:20Z"
    assert "GpuIdle" in ann[Annotations.REASON]
    events = kube.objects("Event", "ml")
    assert [(e["reason"], e["type"], e["involvedObject"]["name"]) for e in events] == [
        ("GPUIdleReclaimed", "Normal", "train")
    ]


def test_stale_resource_version_conflicts(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    seed_deployment(kube)
    ws = reader.workload(DEPLOY)
    kube.patch("Deployment", "train", {"spec": {"replicas": 5}}, "ml")  # a human scaled it up
    with pytest.raises(Conflict) as caught:
        executor.apply(action(LadderStep.RECLAIM), ws, NOW)
    assert isinstance(caught.value, TransientError)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 5


def test_restore_brings_back_exact_replicas(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    seed_deployment(kube, replicas=4)
    executor.apply(action(LadderStep.ANNOTATE), reader.workload(DEPLOY), NOW - 100)
    executor.apply(action(LadderStep.RECLAIM), reader.workload(DEPLOY), NOW)
    executor.apply(action(LadderStep.RESTORE), reader.workload(DEPLOY), NOW + 60)
    obj = kube.get("Deployment", "train", "ml")
    assert obj["spec"]["replicas"] == 4
    ann = obj["metadata"].get("annotations", {})
    assert set(ann) == {Annotations.RESTORED_AT}


def test_restore_leaves_a_human_change_alone(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    seed_deployment(kube, replicas=4)
    executor.apply(action(LadderStep.RECLAIM), reader.workload(DEPLOY), NOW)
    kube.patch("Deployment", "train", {"spec": {"replicas": 1}}, "ml")
    message = executor.restore(reader.workload(DEPLOY), NOW + 60)
    assert "left at 1" in message
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 1


def test_annotate_and_notify_events_dedupe(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    seed_deployment(kube)
    executor.apply(action(LadderStep.NOTIFY), reader.workload(DEPLOY), NOW)
    executor.apply(action(LadderStep.NOTIFY), reader.workload(DEPLOY), NOW + 1)  # a retry
    executor.apply(action(LadderStep.NOTIFY, episode="ep2"), reader.workload(DEPLOY), NOW + 2)
    (event,) = kube.objects("Event", "ml")
    assert (event["reason"], event["type"], event["count"]) == ("GPUIdleNotified", "Warning", 2)
    executor.apply(
        action(LadderStep.ANNOTATE, next_step=LadderStep.RECLAIM, next_step_due=NOW + 3600),
        reader.workload(DEPLOY),
        NOW,
    )
    ann = kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    assert ann[Annotations.EPISODE] == "ep1"
    assert ann[Annotations.PENDING_ACTION] == "scale to 0"
    assert ann[Annotations.PENDING_ACTION_AT] == "2023-11-14T23:13:20Z"
    assert all(
        r.query.get("fieldManager") == "gpu-guardian"
        for r in kube.requests(verb="patch") + kube.requests(verb="create")
    )


def test_dry_run_changes_nothing(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    seed_deployment(kube)
    ws = reader.workload(DEPLOY)
    kube.clear_requests()
    caplog.set_level("INFO")
    for step in (LadderStep.NOTIFY, LadderStep.ANNOTATE, LadderStep.RECLAIM):
        result = executor.apply(action(step, dry_run=True), ws, NOW)
        assert result.outcome is StepOutcome.DRY_RUN
    assert [r.verb for r in kube.requests()] == []
    assert "would scale Deployment train from 3 to 0" in caplog.text


def test_notebook_is_stopped_by_annotation_never_scaled(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    nb = kube.create(b.notebook("nb", "ml"))
    sts = kube.create(b.statefulset("nb", "ml", owners=[b.owner_reference(nb)]))
    kube.create(b.pod("nb-0", "ml", owners=[b.owner_reference(sts)]))
    owner = reader.resolve_pod("ml", "nb-0")
    assert owner.root == WorkloadRef("kubeflow.org/v1", "Notebook", "ml", "nb")
    ws = reader.workload(owner.root)
    executor.apply(action(LadderStep.RECLAIM, owner.root), ws, NOW)
    ann = kube.get("Notebook", "nb", "ml")["metadata"]["annotations"]
    assert ann[NOTEBOOK_STOPPED] == "2023-11-14T22:13:20Z"
    assert kube.get("StatefulSet", "nb", "ml")["spec"]["replicas"] == 1
    assert not kube.requests(path="statefulsets/nb", verb="patch")
    executor.apply(action(LadderStep.RESTORE, owner.root), reader.workload(owner.root), NOW + 9)
    assert NOTEBOOK_STOPPED not in kube.get("Notebook", "nb", "ml")["metadata"]["annotations"]


def test_cronjob_and_its_running_job_are_suspended(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    cj = kube.create(b.cronjob("nightly", "ml"))
    job = kube.create(b.job("nightly-1", "ml", owners=[b.owner_reference(cj)]))
    kube.create(b.pod("nightly-1-x", "ml", owners=[b.owner_reference(job)]))
    snap = reader.snapshot([("ml", "nightly-1-x")], [], "gpu-guardian")
    root = snap.pod_owners[("ml", "nightly-1-x")].root
    assert root == WorkloadRef("batch/v1", "CronJob", "ml", "nightly")
    ws = snap.workloads[root]
    assert ws.jobs == ("nightly-1",)
    executor.apply(action(LadderStep.RECLAIM, root), ws, NOW)
    assert kube.get("CronJob", "nightly", "ml")["spec"]["suspend"] is True
    assert kube.get("Job", "nightly-1", "ml")["spec"]["suspend"] is True
    assert (
        Annotations.SUSPENDED_JOBS
        in kube.get("CronJob", "nightly", "ml")["metadata"]["annotations"]
    )
    executor.apply(action(LadderStep.RESTORE, root), reader.workload(root), NOW + 5)
    assert kube.get("CronJob", "nightly", "ml")["spec"]["suspend"] is False
    assert kube.get("Job", "nightly-1", "ml")["spec"]["suspend"] is False
    # The restore leaves none of our marks behind (suspended-jobs was left once).
    left = kube.get("CronJob", "nightly", "ml")["metadata"].get("annotations") or {}
    assert [k for k in left if k != Annotations.RESTORED_AT and k.startswith("gpu-guardian")] == []


def test_custom_kind_scaled_through_its_scale_subresource(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    lws = kube.create(
        {
            "apiVersion": LWS.api_version,
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "serve", "namespace": "ml"},
            "spec": {"replicas": 2},
            "status": {"replicas": 2, "hpaPodSelector": "app=serve"},
        }
    )
    sts = kube.create(b.statefulset("serve", "ml", owners=[b.owner_reference(lws)]))
    kube.create(b.pod("serve-0", "ml", owners=[b.owner_reference(sts)]))
    root = reader.resolve_pod("ml", "serve-0").root
    assert root is not None
    assert root.kind == "LeaderWorkerSet"
    ws = reader.workload(root)
    assert (ws.action, ws.replicas) == (ActionKind.SCALE_SUBRESOURCE, 2)
    executor.apply(action(LadderStep.RECLAIM, root), ws, NOW)
    obj = kube.get("LeaderWorkerSet", "serve", "ml")
    assert obj["spec"]["replicas"] == 0
    assert obj["metadata"]["annotations"][Annotations.ORIGINAL_REPLICAS] == "2"
    scale_puts = kube.requests(verb="update", path="leaderworkersets/serve/scale")
    assert len(scale_puts) == 1
    executor.apply(action(LadderStep.RESTORE, root), reader.workload(root), NOW + 5)
    assert kube.get("LeaderWorkerSet", "serve", "ml")["spec"]["replicas"] == 2


def test_hpa_min_replicas_recorded_and_restored(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    dep = seed_deployment(kube, replicas=2)
    kube.create(b.hpa(dep, min_replicas=2, max_replicas=6))
    ws = reader.workload(DEPLOY)
    assert ws.hpa is not None
    assert ws.hpa.min_replicas == 2
    executor.apply(action(LadderStep.RECLAIM, hpa_record=True), ws, NOW)
    ann = kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    assert (ann[Annotations.HPA], ann[Annotations.ORIGINAL_MIN_REPLICAS]) == ("train", "2")
    kube.patch("HorizontalPodAutoscaler", "train", {"spec": {"minReplicas": 1}}, "ml")
    message = executor.restore(reader.workload(DEPLOY), NOW + 5)
    assert "HPA train minReplicas 2" in message
    assert kube.get("HorizontalPodAutoscaler", "train", "ml")["spec"]["minReplicas"] == 2
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2


def test_a_restore_after_its_hpa_was_deleted_scales_back_and_says_so(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    dep = seed_deployment(kube, replicas=2)
    kube.create(b.hpa(dep, min_replicas=2, max_replicas=6))
    executor.apply(action(LadderStep.RECLAIM, hpa_record=True), reader.workload(DEPLOY), NOW)
    kube.delete("HorizontalPodAutoscaler", "train", "ml")
    message = executor.restore(reader.workload(DEPLOY), NOW + 5)
    assert "HPA train is gone: minReplicas not restored" in message
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2


def test_bare_pod_deleted_with_preconditions_only_when_allowed(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor
) -> None:
    kube.create(b.pod("lonely", "ml"))
    ref = reader.resolve_pod("ml", "lonely").root
    assert ref == WorkloadRef("v1", "Pod", "ml", "lonely")
    ws = reader.workload(ref)
    assert ws.action is ActionKind.POD
    with pytest.raises(ValueError, match="cannot be reclaimed"):
        executor.apply(action(LadderStep.RECLAIM, ref), ws, NOW)
    executor.apply(action(LadderStep.RECLAIM, ref, delete_pod=True), ws, NOW)
    assert not kube.objects("Pod", "ml")
    (delete,) = kube.requests(verb="delete")
    assert delete.body["preconditions"] == {"uid": ws.uid, "resourceVersion": ws.resource_version}


@pytest.mark.parametrize(
    ("status", "error", "base"),
    [
        (403, Forbidden, PermanentError),
        (404, NotFound, PermanentError),
        (500, Unavailable, TransientError),
        (429, Unavailable, TransientError),
        (409, Conflict, TransientError),
    ],
)
def test_api_errors_map_to_retry_semantics(
    kube: FakeKubeAPI,
    reader: KubeReader,
    executor: Executor,
    status: int,
    error: type,
    base: type,
) -> None:
    seed_deployment(kube)
    ws = reader.workload(DEPLOY)
    kube.fail_next(status, verb="patch", retry_after=3 if status == 429 else None)
    with pytest.raises(error) as caught:
        executor.apply(action(LadderStep.RECLAIM), ws, NOW)
    assert isinstance(caught.value, base)
    if status == 429:
        assert caught.value.delay == 3.0


def test_connection_failure_is_transient(kube: FakeKubeAPI, rest: KubeRest) -> None:
    kube.disconnect_next(verb="get", times=None)  # urllib3 retries a dropped connection
    with pytest.raises(Unavailable):
        rest.get("/api/v1/namespaces/default")
