"""Extra resource types (a CRD with a scale subresource), collection deletes, odd requests."""

from __future__ import annotations

import pytest
from kubernetes import client

from testbed.kubeapi import FakeKubeAPI, builders
from tests.integration.testbed.conftest import raw_request
from tests.plugins.kube_fixture import LWS

pytestmark = pytest.mark.e2e

LWS_API = {"group": LWS.group, "version": LWS.version, "plural": LWS.plural}


def test_custom_resource_scale_subresource(kube: FakeKubeAPI, api_client: client.ApiClient) -> None:
    kube.create(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "llm", "namespace": "default"},
            "spec": {"replicas": 2},
            "status": {"replicas": 2, "hpaPodSelector": "leaderworkerset.sigs.k8s.io/name=llm"},
        }
    )
    custom = client.CustomObjectsApi(api_client)
    scale = custom.get_namespaced_custom_object_scale(namespace="default", name="llm", **LWS_API)
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == "leaderworkerset.sigs.k8s.io/name=llm"
    custom.patch_namespaced_custom_object_scale(
        namespace="default", name="llm", body={"spec": {"replicas": 0}}, **LWS_API
    )
    assert kube.get("LeaderWorkerSet", "llm")["spec"]["replicas"] == 0
    discovery = client.ApisApi(api_client).get_api_versions()
    assert "leaderworkerset.x-k8s.io" in [group.name for group in discovery.groups]


def test_delete_collection_with_a_selector(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.create(builders.pod("a", labels={"app": "x"}))
    kube_api.create(builders.pod("b", labels={"app": "y"}))
    core.delete_collection_namespaced_pod("default", label_selector="app=x")
    assert [p["metadata"]["name"] for p in kube_api.objects("Pod")] == ["b"]


def test_odd_requests_get_real_errors(kube_api: FakeKubeAPI) -> None:
    code, status = raw_request(kube_api, "GET", "/apis/apps/v1/namespaces/default/widgets")
    assert (code, status["reason"]) == (404, "NotFound")
    code, status = raw_request(kube_api, "POST", "/api/v1/pods", builders.pod("p"))
    assert code == 404
    code, status = raw_request(
        kube_api,
        "PATCH",
        "/api/v1/namespaces/default",
        {"metadata": {}},
        content_type="application/apply-patch+yaml",
    )
    assert code == 415
    code, status = raw_request(kube_api, "GET", "/api/v1/namespaces/default/pods?limit=x")
    assert code == 400


def test_generate_name_and_put_create_for_leases(
    kube_client: client.ApiClient, kube_api: FakeKubeAPI
) -> None:
    core = client.CoreV1Api(kube_client)
    made = core.create_namespaced_pod(
        "default", {"metadata": {"generateName": "job-"}, "spec": builders.pod("x")["spec"]}
    )
    assert made.metadata.name.startswith("job-")
    assert len(made.metadata.name) == len("job-") + 5
    leases = client.CoordinationV1Api(kube_client)
    created = leases.replace_namespaced_lease(
        "fresh", "default", builders.lease("fresh", holder="a")
    )
    assert created.spec.holder_identity == "a"
    assert kube_api.requests(verb="update")[0].status == 201
