"""Notebooks (a custom resource), Events, Leases and HPAs through the real client."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, builders
from testbed.kubeapi.patch import MERGE_PATCH
from tests.integration.testbed.conftest import raw_request

pytestmark = pytest.mark.e2e

NB = {"group": "kubeflow.org", "version": "v1", "plural": "notebooks"}
STOPPED = "kubeflow-resource-stopped"


def test_notebook_crud_with_custom_objects_api(
    kube_client: client.ApiClient, kube_api: FakeKubeAPI
) -> None:
    custom = client.CustomObjectsApi(kube_client)
    kube_api.create(builders.namespace("ml"))
    created = custom.create_namespaced_custom_object(
        namespace="ml", body=builders.notebook("nb", "ml"), **NB
    )
    assert created["kind"] == "Notebook"
    assert created["metadata"]["generation"] == 1
    listed = custom.list_namespaced_custom_object(namespace="ml", **NB)
    assert listed["kind"] == "NotebookList"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["nb"]

    stamp = "2026-01-01T00:00:00Z"
    stopped = custom.patch_namespaced_custom_object(
        namespace="ml", name="nb", body={"metadata": {"annotations": {STOPPED: stamp}}}, **NB
    )
    assert stopped["metadata"]["annotations"] == {STOPPED: stamp}
    (request,) = kube_api.requests(verb="patch")
    assert request.content_type == "application/merge-patch+json"
    restarted = custom.patch_namespaced_custom_object(
        namespace="ml", name="nb", body={"metadata": {"annotations": {STOPPED: None}}}, **NB
    )
    assert "annotations" not in restarted["metadata"] or not restarted["metadata"]["annotations"]

    all_notebooks = custom.list_cluster_custom_object(**NB)
    assert len(all_notebooks["items"]) == 1
    custom.delete_namespaced_custom_object(namespace="ml", name="nb", **NB)
    with pytest.raises(ApiException) as caught:
        custom.get_namespaced_custom_object(namespace="ml", name="nb", **NB)
    assert caught.value.status == 404


def test_notebooks_refuse_strategic_merge_and_can_be_watched(
    kube_client: client.ApiClient, kube_api: FakeKubeAPI
) -> None:
    custom = client.CustomObjectsApi(kube_client)
    kube_api.create(builders.notebook("nb"))
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            namespace="default",
            name="nb",
            body={"metadata": {"labels": {"a": "b"}}},
            _content_type="application/strategic-merge-patch+json",
            **NB,
        )
    assert caught.value.status == 415
    events = list(
        watch.Watch().stream(
            custom.list_namespaced_custom_object, namespace="default", timeout_seconds=1, **NB
        )
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "nb")]


def test_core_events_create_and_bump_count(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    dep = kube_api.create(builders.deployment("web"))
    when = datetime(2026, 1, 1, tzinfo=UTC)
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="web.gpu-idle", namespace="default"),
        involved_object=client.V1ObjectReference(
            api_version="apps/v1",
            kind="Deployment",
            name="web",
            namespace="default",
            uid=dep["metadata"]["uid"],
        ),
        reason="GPUIdleNotified",
        message="idle for 2h",
        type="Normal",
        source=client.V1EventSource(component="gpu-guardian"),
        reporting_component="gpu-guardian",
        reporting_instance="guardian-0",
        first_timestamp=when,
        last_timestamp=when,
        count=1,
    )
    created = core.create_namespaced_event("default", body, field_manager="gpu-guardian")
    assert created.involved_object.uid == dep["metadata"]["uid"]
    found = core.list_namespaced_event(
        "default", field_selector=f"involvedObject.uid={dep['metadata']['uid']}"
    )
    assert [e.metadata.name for e in found.items] == ["web.gpu-idle"]
    bumped = core.patch_namespaced_event(
        "web.gpu-idle", "default", {"count": 2}, _content_type=MERGE_PATCH
    )
    assert bumped.count == 2


def test_events_k8s_io_requires_event_time(
    kube_client: client.ApiClient, kube_api: FakeKubeAPI
) -> None:
    events = client.EventsV1Api(kube_client)
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.1"},
        "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"},
        "reason": "GPUIdleScaledDown",
        "action": "ScaleDown",
        "note": "scaled to 0",
        "type": "Normal",
        "reportingController": "gpu-guardian.io/controller",
        "reportingInstance": "guardian-0",
    }
    # The typed client refuses to send an event without eventTime; the server refuses it too.
    code, status = raw_request(
        kube_api, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", body
    )
    assert code == 422
    assert [cause["field"] for cause in status["details"]["causes"]] == ["eventTime"]
    body["eventTime"] = "2026-01-01T00:00:00.000000Z"
    created = events.create_namespaced_event("default", body)
    assert created.reporting_controller == "gpu-guardian.io/controller"
    assert kube_api.objects("Event", api_version="events.k8s.io/v1")[0]["note"] == "scaled to 0"
    assert kube_api.objects("Event") == []  # core/v1 events are a separate resource here


def test_lease_create_update_and_conflict(kube_client: client.ApiClient) -> None:
    leases = client.CoordinationV1Api(kube_client)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    created = leases.create_namespaced_lease(
        "kube-system",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="gpu-guardian"),
            spec=client.V1LeaseSpec(
                holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now
            ),
        ),
    )
    assert created.spec.holder_identity == "a"
    with pytest.raises(ApiException) as exists:
        leases.create_namespaced_lease("kube-system", created)
    assert exists.value.status == 409

    renewed = leases.read_namespaced_lease("gpu-guardian", "kube-system")
    renewed.spec.renew_time = now.replace(second=5)
    leases.replace_namespaced_lease("gpu-guardian", "kube-system", renewed)
    # A second candidate that read before the renewal loses the race.
    created.spec.holder_identity = "b"
    with pytest.raises(ApiException) as conflict:
        leases.replace_namespaced_lease("gpu-guardian", "kube-system", created)
    assert conflict.value.status == 409
    held = leases.read_namespaced_lease("gpu-guardian", "kube-system")
    assert held.spec.holder_identity == "a"
    assert held.spec.renew_time == now.replace(second=5)


def test_hpa_min_replicas_round_trip(kube_client: client.ApiClient, kube_api: FakeKubeAPI) -> None:
    hpas = client.AutoscalingV2Api(kube_client)
    kube_api.create(builders.deployment("web"))
    hpas.create_namespaced_horizontal_pod_autoscaler(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 5,
            },
        },
    )
    patched = hpas.patch_namespaced_horizontal_pod_autoscaler(
        "web", "default", {"spec": {"minReplicas": 1}}, _content_type=MERGE_PATCH
    )
    assert patched.spec.min_replicas == 1
    assert patched.spec.scale_target_ref.name == "web"


def test_the_clients_lease_lock_works_against_the_fake(kube_client: client.ApiClient) -> None:
    from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord
    from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

    def lock(identity: str) -> LeaseLock:
        candidate = LeaseLock("gpu-guardian", "kube-system", identity)
        candidate.api_instance = client.CoordinationV1Api(kube_client)
        return candidate

    first, second = lock("a"), lock("b")
    record = LeaderElectionRecord("a", "15", "2026-01-01 00:00:00", "2026-01-01 00:00:00")
    found, error = first.get("gpu-guardian", "kube-system")
    assert not found
    assert error.status == 404
    assert first.create("gpu-guardian", "kube-system", record)
    assert not second.create("gpu-guardian", "kube-system", record)  # 409 AlreadyExists
    found, seen = second.get("gpu-guardian", "kube-system")
    assert found
    assert seen.holder_identity == "a"
    renewed = LeaderElectionRecord("a", "15", "2026-01-01 00:00:00", "2026-01-01 00:00:10")
    assert first.update("gpu-guardian", "kube-system", renewed)
    taken = LeaderElectionRecord("b", "15", "2026-01-01 00:00:20", "2026-01-01 00:00:20")
    assert not second.update("gpu-guardian", "kube-system", taken)  # stale: 409 Conflict
    assert second.get("gpu-guardian", "kube-system")[1].holder_identity == "a"
