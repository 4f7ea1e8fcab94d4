"""CRUD through the real `kubernetes` client: every kind, errors as real Status objects."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, builders
from testbed.kubeapi.patch import MERGE_PATCH
from tests.integration.testbed.conftest import ManualClock, raw_request

pytestmark = pytest.mark.e2e


def _status_body(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def test_kubeconfig_loads_with_load_kube_config(kube_api: FakeKubeAPI, kubeconfig: Path) -> None:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    assert configuration.host == kube_api.url
    with client.ApiClient(configuration) as api_client:
        names = [ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items]
    assert names == ["default", "kube-system"]


def test_bearer_token_is_required_when_configured(tmp_path: Path) -> None:
    with FakeKubeAPI.start(token="s3cret") as api:  # noqa: S106 - a test token
        good = config.new_client_from_config(config_file=str(api.write_kubeconfig(tmp_path / "k")))
        try:
            assert client.CoreV1Api(good).read_namespace("default").metadata.name == "default"
        finally:
            good.close()
        configuration = client.Configuration(host=api.url)
        with client.ApiClient(configuration) as anonymous, pytest.raises(ApiException) as caught:
            client.CoreV1Api(anonymous).read_namespace("default")
    assert caught.value.status == 401


def _apps_crud(apps: client.AppsV1Api, kind: str) -> tuple[Callable[..., Any], ...]:
    snake = {"Deployment": "deployment", "StatefulSet": "stateful_set", "ReplicaSet": "replica_set"}
    name = snake[kind]
    return tuple(
        getattr(apps, f"{verb}_namespaced_{name}")
        for verb in ("create", "read", "list", "replace", "patch", "delete")
    )


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
def test_apps_workload_crud(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI, kube_clock: ManualClock, kind: str
) -> None:
    create, read, list_, replace, patch, delete = _apps_crud(apps, kind)
    body = getattr(builders, kind.lower())("train", "default", replicas=2)
    body["status"] = {"replicas": 99}
    created = create("default", body, field_manager="gpu-guardian")
    meta = created.metadata
    assert (meta.name, meta.namespace, meta.generation) == ("train", "default", 1)
    assert meta.uid
    assert int(meta.resource_version) > 0
    assert meta.creation_timestamp.isoformat() == kube_clock.now.isoformat()
    assert created.status is None  # the server owns status: a create drops it
    assert read("train", "default").spec.replicas == 2
    assert [item.metadata.name for item in list_("default").items] == ["train"]

    created.spec.replicas = 3
    replaced = replace("train", "default", created)
    assert replaced.spec.replicas == 3
    assert replaced.metadata.generation == 2
    assert int(replaced.metadata.resource_version) > int(meta.resource_version)

    patched = patch(
        "train", "default", {"metadata": {"labels": {"team": "a"}}}, _content_type=MERGE_PATCH
    )
    assert patched.metadata.labels["team"] == "a"
    assert patched.metadata.generation == 2  # metadata changes do not bump the generation

    delete("train", "default")
    with pytest.raises(ApiException) as caught:
        read("train", "default")
    assert caught.value.status == 404
    assert kube_api.objects(kind) == []


def test_create_twice_is_409_already_exists(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment("default", builders.deployment("web"))
    with pytest.raises(ApiException) as caught:
        apps.create_namespaced_deployment("default", builders.deployment("web"))
    status = _status_body(caught.value)
    assert caught.value.status == 409
    assert (status["kind"], status["status"], status["reason"]) == (
        "Status",
        "Failure",
        "AlreadyExists",
    )
    assert status["message"] == 'deployments.apps "web" already exists'


def test_missing_objects_and_namespaces_are_404(
    apps: client.AppsV1Api, core: client.CoreV1Api
) -> None:
    with pytest.raises(ApiException) as missing:
        apps.read_namespaced_deployment("ghost", "default")
    assert _status_body(missing.value)["reason"] == "NotFound"
    with pytest.raises(ApiException) as no_ns:
        core.create_namespaced_pod("nowhere", builders.pod("p", "nowhere"))
    assert no_ns.value.status == 404
    assert _status_body(no_ns.value)["message"] == 'namespaces "nowhere" not found'


def test_invalid_objects_are_422_naming_each_field(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI
) -> None:
    with pytest.raises(ApiException) as caught:
        apps.create_namespaced_deployment("default", builders.deployment("Bad_Name"))
    assert caught.value.status == 422
    assert _status_body(caught.value)["reason"] == "Invalid"
    # The typed client refuses to send these bodies, so send them raw.
    body = builders.deployment("web")
    del body["spec"]["selector"]
    body["metadata"]["annotations"] = {"n": 3}
    code, status = raw_request(
        kube_api, "POST", "/apis/apps/v1/namespaces/default/deployments", body
    )
    assert (code, status["reason"]) == (422, "Invalid")
    fields = {cause["field"] for cause in status["details"]["causes"]}
    assert fields == {"metadata.annotations[n]", "spec.selector"}
    code, status = raw_request(
        kube_api, "POST", "/apis/apps/v1/namespaces/default/deployments", {"kind": "Pod"}
    )
    assert (code, status["reason"]) == (400, "BadRequest")


def test_stale_resource_version_update_is_409_conflict(apps: client.AppsV1Api) -> None:
    first = apps.create_namespaced_deployment("default", builders.deployment("web"))
    apps.patch_namespaced_deployment(
        "web", "default", {"metadata": {"labels": {"x": "1"}}}, _content_type=MERGE_PATCH
    )
    first.spec.replicas = 5
    with pytest.raises(ApiException) as caught:
        apps.replace_namespaced_deployment("web", "default", first)
    assert caught.value.status == 409
    assert _status_body(caught.value)["reason"] == "Conflict"
    assert "the object has been modified" in _status_body(caught.value)["message"]
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 1


def test_update_keeps_server_owned_fields_and_status(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI
) -> None:
    seeded = kube_api.create(builders.deployment("web", replicas=2))
    assert seeded["status"]["replicas"] == 2  # seeding keeps status, as controllers set it
    current = apps.read_namespaced_deployment("web", "default")
    current.status.replicas = 40
    current.metadata.uid = None
    updated = apps.replace_namespaced_deployment("web", "default", current)
    assert updated.status.replicas == 2
    assert updated.metadata.uid == seeded["metadata"]["uid"]


def test_every_write_bumps_one_global_resource_version(
    apps: client.AppsV1Api, core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    start = int(kube_api.resource_version)
    versions = [
        apps.create_namespaced_deployment("default", builders.deployment("a")),
        core.create_namespaced_pod("default", builders.pod("p")),
        apps.patch_namespaced_deployment(
            "a", "default", {"spec": {"replicas": 4}}, _content_type=MERGE_PATCH
        ),
    ]
    assert [int(v.metadata.resource_version) for v in versions] == [start + 1, start + 2, start + 3]
    # A write that changes nothing does not bump the version.
    again = apps.patch_namespaced_deployment(
        "a", "default", {"spec": {"replicas": 4}}, _content_type=MERGE_PATCH
    )
    assert again.metadata.resource_version == str(start + 3)


def test_pods_namespaces_jobs_cronjobs_crud(kube_client: client.ApiClient) -> None:
    core, batch = client.CoreV1Api(kube_client), client.BatchV1Api(kube_client)
    core.create_namespace(builders.namespace("ml", labels={"team": "ml"}))
    assert core.read_namespace("ml").status.phase == "Active"
    pod = core.create_namespaced_pod("ml", builders.pod("p", "ml", node="n1"))
    assert pod.spec.node_name == "n1"
    job = batch.create_namespaced_job("ml", builders.job("j", "ml"))
    assert job.spec.suspend is False
    suspended = batch.patch_namespaced_job(
        "j", "ml", {"spec": {"suspend": True}}, _content_type=MERGE_PATCH
    )
    assert suspended.spec.suspend is True
    cron = batch.create_namespaced_cron_job("ml", builders.cronjob("c", "ml"))
    assert cron.spec.schedule == "0 * * * *"
    batch.patch_namespaced_cron_job(
        "c", "ml", {"spec": {"suspend": True}}, _content_type=MERGE_PATCH
    )
    assert batch.read_namespaced_cron_job("c", "ml").spec.suspend is True
    deleted = core.delete_namespaced_pod("p", "ml")
    assert deleted.metadata.name == "p"  # pods answer with the deleted object
    core.delete_namespace("ml")
    assert batch.list_namespaced_job("ml").items == []  # namespace deletion removes its objects


def test_owner_references_round_trip_and_cascade(
    apps: client.AppsV1Api, core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    dep = kube_api.create(builders.deployment("web"))
    rs = kube_api.create(builders.replicaset("web-1", owners=[builders.owner_reference(dep)]))
    kube_api.create(builders.pod("web-1-a", owners=[builders.owner_reference(rs)]))
    pod = core.read_namespaced_pod("web-1-a", "default")
    (ref,) = pod.metadata.owner_references
    assert (ref.kind, ref.name, ref.uid, ref.controller) == (
        "ReplicaSet",
        "web-1",
        rs["metadata"]["uid"],
        True,
    )
    apps.delete_namespaced_deployment("web", "default", propagation_policy="Orphan")
    assert apps.read_namespaced_replica_set("web-1", "default").metadata.owner_references is None
    apps.delete_namespaced_replica_set("web-1", "default")
    assert kube_api.objects("Pod") == []  # background propagation removes dependents


def test_field_manager_is_recorded(apps: client.AppsV1Api, kube_api: FakeKubeAPI) -> None:
    apps.create_namespaced_deployment("default", builders.deployment("web"))
    apps.patch_namespaced_deployment(
        "web",
        "default",
        {"metadata": {"annotations": {"a": "b"}}},
        field_manager="gpu-guardian",
        _content_type=MERGE_PATCH,
    )
    (patch,) = kube_api.requests(verb="patch")
    assert patch.field_manager == "gpu-guardian"
    assert patch.query["fieldManager"] == "gpu-guardian"
    managers = {
        m["manager"] for m in kube_api.get("Deployment", "web")["metadata"]["managedFields"]
    }
    assert managers == {"gpu-guardian", "OpenAPI-Generator"}


def test_dry_run_changes_nothing(apps: client.AppsV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.create(builders.deployment("web", replicas=3))
    before = kube_api.resource_version
    result = apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"replicas": 0}}, dry_run="All", _content_type=MERGE_PATCH
    )
    assert result.spec.replicas == 0
    assert kube_api.get("Deployment", "web")["spec"]["replicas"] == 3
    assert kube_api.resource_version == before
