"""ConfigMaps through the real client: compare-and-swap replace, and the API server's own
checks (keys, 1 MiB, immutable) that the controller's shared state relies on."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, builders
from testbed.kubeapi.validation import MAX_CONFIG_MAP_BYTES
from tests.integration.testbed.conftest import raw_request

pytestmark = pytest.mark.e2e


def _cm(name: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ops"},
        "data": data,
        **extra,
    }


def test_configmap_replace_is_a_compare_and_swap(
    core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.create(builders.namespace("ops"))
    created = core.create_namespaced_config_map("ops", _cm("state", {"a": "1"}))
    seen = created.metadata.resource_version
    body = _cm("state", {"a": "2"})
    body["metadata"]["resourceVersion"] = seen
    replaced = core.replace_namespaced_config_map("state", "ops", body)
    assert replaced.data == {"a": "2"}
    assert replaced.metadata.resource_version != seen

    stale = _cm("state", {"a": "3"})
    stale["metadata"]["resourceVersion"] = seen  # a second writer that read before the first
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("state", "ops", stale)
    assert caught.value.status == 409
    assert core.read_namespaced_config_map("state", "ops").data == {"a": "2"}
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_config_map("ops", _cm("state", {}))
    assert exists.value.status == 409
    assert [c["metadata"]["name"] for c in kube_api.objects("cm", "ops")] == ["state"]


def test_configmap_keys_and_size_are_checked(kube_api: FakeKubeAPI) -> None:
    kube_api.create(builders.namespace("ops"))
    path = "/api/v1/namespaces/ops/configmaps"
    status, body = raw_request(kube_api, "POST", path, _cm("bad", {"no/slash": "x", "ok.1": "y"}))
    assert status == 422
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "data[no/slash]"
    assert "a valid config key" in cause["message"]

    big = "x" * (MAX_CONFIG_MAP_BYTES // 2)
    status, body = raw_request(kube_api, "POST", path, _cm("big", {"a": big, "b": big + "y"}))
    assert status == 422
    assert "must have at most 1048576 bytes" in body["message"]
    status, _ = raw_request(kube_api, "POST", path, _cm("fits", {"a": big, "b": big}))
    assert status == 201

    status, body = raw_request(kube_api, "POST", path, _cm("num", {"a": 1}))
    assert status == 400
    both = _cm("both", {"k": "v"}, binaryData={"k": "dg=="})
    status, body = raw_request(kube_api, "POST", path, both)
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "binaryData[k]"


def test_an_immutable_configmap_cannot_change(
    core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.create(builders.namespace("ops"))
    core.create_namespaced_config_map("ops", _cm("frozen", {"a": "1"}, immutable=True))
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map(
            "frozen", "ops", _cm("frozen", {"a": "2"}, immutable=True)
        )
    assert caught.value.status == 422
    assert "field is immutable when `immutable` is set" in caught.value.body
    with pytest.raises(ApiException):
        core.replace_namespaced_config_map("frozen", "ops", _cm("frozen", {"a": "1"}))
    labelled = _cm("frozen", {"a": "1"}, immutable=True)
    labelled["metadata"]["labels"] = {"tier": "x"}  # metadata may still change
    assert core.replace_namespaced_config_map("frozen", "ops", labelled).metadata.labels == {
        "tier": "x"
    }
