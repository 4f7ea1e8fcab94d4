"""Patch types, optimistic concurrency, and the scale and status subresources."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, builders

pytestmark = pytest.mark.e2e

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@pytest.fixture
def web(kube_api: FakeKubeAPI) -> dict[str, Any]:
    return kube_api.create(
        builders.deployment("web", replicas=3, annotations={"keep": "1", "drop": "2"})
    )


def test_merge_patch_null_deletes_and_lists_replace(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI, web: dict[str, Any]
) -> None:
    patched = apps.patch_namespaced_deployment(
        "web",
        "default",
        {
            "metadata": {"annotations": {"drop": None, "new": "3"}},
            "spec": {"template": {"spec": {"containers": [{"name": "other", "image": "o"}]}}},
        },
        _content_type=MERGE,
    )
    assert patched.metadata.annotations == {"keep": "1", "new": "3"}
    assert [c.name for c in patched.spec.template.spec.containers] == ["other"]
    (request,) = kube_api.requests(verb="patch")
    assert request.content_type == MERGE
    assert request.body["metadata"]["annotations"] == {"drop": None, "new": "3"}


def test_the_typed_clients_strategic_merge_applies_and_json_patch_is_refused_with_415(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI, web: dict[str, Any]
) -> None:
    """What the typed client sends by default (dict: strategic merge, list: JSON patch):
    the first applies to a built-in kind; the second is refused, naming the types this
    server implements, and changes nothing."""
    annotate = {"metadata": {"annotations": {"gpu-guardian.io/reason": "idle"}}}
    patched = apps.patch_namespaced_deployment("web", "default", annotate)
    assert patched.metadata.annotations == {
        "keep": "1",
        "drop": "2",
        "gpu-guardian.io/reason": "idle",
    }
    ops = [{"op": "add", "path": "/metadata/annotations/x", "value": "1"}]
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment("web", "default", ops)
    assert caught.value.status == 415
    assert json.loads(caught.value.body)["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        f"application/strategic-merge-patch+json, {MERGE}"
    )
    assert [r.content_type for r in kube_api.requests(verb="patch")] == [
        "application/strategic-merge-patch+json",
        JSON_PATCH,
    ]
    assert kube_api.get("Deployment", "web")["metadata"]["annotations"] == {
        "keep": "1",
        "drop": "2",
        "gpu-guardian.io/reason": "idle",
    }


def test_merge_patch_with_a_stale_resource_version_is_409(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI, web: dict[str, Any]
) -> None:
    observed = web["metadata"]["resourceVersion"]
    kube_api.patch("Deployment", "web", {"spec": {"replicas": 5}})  # someone scales it up
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment(
            "web",
            "default",
            {
                "metadata": {"resourceVersion": observed, "annotations": {"r": "x"}},
                "spec": {"replicas": 0},
            },
            _content_type=MERGE,
        )
    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "Conflict"
    assert kube_api.get("Deployment", "web")["spec"]["replicas"] == 5
    (refused,) = kube_api.requests(verb="patch")
    assert (refused.status, refused.field_manager) == (409, "OpenAPI-Generator")
    current = kube_api.get("Deployment", "web")["metadata"]["resourceVersion"]
    done = apps.patch_namespaced_deployment(
        "web",
        "default",
        {"metadata": {"resourceVersion": current}, "spec": {"replicas": 0}},
        _content_type=MERGE,
    )
    assert done.spec.replicas == 0
    assert done.metadata.generation == 3


def test_patch_of_a_missing_object_is_404(apps: client.AppsV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment(
            "ghost", "default", {"spec": {"replicas": 0}}, _content_type=MERGE
        )
    assert caught.value.status == 404


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
def test_scale_subresource(apps: client.AppsV1Api, kube_api: FakeKubeAPI, kind: str) -> None:
    suffix = {
        "Deployment": "deployment",
        "StatefulSet": "stateful_set",
        "ReplicaSet": "replica_set",
    }[kind]
    read = getattr(apps, f"read_namespaced_{suffix}_scale")
    patch = getattr(apps, f"patch_namespaced_{suffix}_scale")
    replace = getattr(apps, f"replace_namespaced_{suffix}_scale")
    seeded = kube_api.create(getattr(builders, kind.lower())("w", replicas=4))

    scale = read("w", "default")
    assert (scale.kind, scale.api_version) == ("Scale", "autoscaling/v1")
    assert (scale.spec.replicas, scale.status.replicas) == (4, 4)
    assert scale.status.selector == "app=w"
    assert scale.metadata.resource_version == seeded["metadata"]["resourceVersion"]
    assert scale.metadata.uid == seeded["metadata"]["uid"]

    patched = patch("w", "default", {"spec": {"replicas": 2}}, _content_type=MERGE)
    assert patched.spec.replicas == 2
    assert kube_api.get(kind, "w")["spec"]["replicas"] == 2

    # A replace that carries the observed version is a compare-and-swap.
    stale = scale
    stale.spec.replicas = 0
    with pytest.raises(ApiException) as caught:
        replace("w", "default", stale)
    assert caught.value.status == 409
    fresh = read("w", "default")
    fresh.spec.replicas = 0
    assert replace("w", "default", fresh).spec.replicas == 0
    stored = kube_api.get(kind, "w")
    assert stored["spec"]["replicas"] == 0
    assert stored["metadata"]["generation"] == 3


def test_scale_rejects_negative_replicas(kube_api: FakeKubeAPI, apps: client.AppsV1Api) -> None:
    kube_api.create(builders.deployment("w"))
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment_scale(
            "w", "default", {"spec": {"replicas": -1}}, _content_type=MERGE
        )
    assert caught.value.status == 422


def test_status_is_a_subresource(apps: client.AppsV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.create(builders.deployment("w", replicas=2))
    ignored = apps.patch_namespaced_deployment(
        "w", "default", {"status": {"replicas": 7}}, _content_type=MERGE
    )
    assert ignored.status.replicas == 2
    updated = apps.patch_namespaced_deployment_status(
        "w", "default", {"status": {"replicas": 7}, "spec": {"replicas": 9}}, _content_type=MERGE
    )
    assert (updated.status.replicas, updated.spec.replicas) == (7, 2)


def test_concurrent_conditional_writes_never_lose_an_update(
    kube_client: client.ApiClient, kube_api: FakeKubeAPI
) -> None:
    """Eight writers increment one annotation with read, conditional patch, retry on 409."""
    kube_api.create(builders.deployment("web", annotations={"count": "0"}))
    apps = client.AppsV1Api(kube_client)
    conflicts: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(5):
                while True:
                    current = apps.read_namespaced_deployment("web", "default")
                    count = int(current.metadata.annotations["count"])
                    body = {
                        "metadata": {
                            "resourceVersion": current.metadata.resource_version,
                            "annotations": {"count": str(count + 1)},
                        }
                    }
                    try:
                        apps.patch_namespaced_deployment(
                            "web", "default", body, _content_type=MERGE
                        )
                        break
                    except ApiException as exc:
                        if exc.status != 409:
                            raise
                        conflicts.append(1)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert kube_api.get("Deployment", "web")["metadata"]["annotations"]["count"] == "40"
    assert len(kube_api.requests(verb="patch", path="web$")) == 40 + len(conflicts)
