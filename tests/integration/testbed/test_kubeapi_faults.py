"""Fault injection, the request log, and clean shutdown."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, Fault, builders
from testbed.kubeapi.patch import MERGE_PATCH

pytestmark = pytest.mark.e2e


def test_fail_next_answers_the_matching_request_once(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.create(builders.deployment("web"))
    kube_api.create(builders.deployment("db"))
    fault = kube_api.fail_next(409, verb="patch", path=r"/deployments/web$")
    body = {"metadata": {"annotations": {"a": "b"}}}
    # Another object: untouched.
    apps.patch_namespaced_deployment("db", "default", body, _content_type=MERGE_PATCH)
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment("web", "default", body, _content_type=MERGE_PATCH)
    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "Conflict"
    assert fault.hits == 1
    assert apps.patch_namespaced_deployment(
        "web", "default", body, _content_type=MERGE_PATCH
    ).metadata.annotations == {"a": "b"}
    statuses = [(r.path.rsplit("/", 1)[-1], r.status) for r in kube_api.requests(verb="patch")]
    assert statuses == [("db", 200), ("web", 409), ("web", 200)]


@pytest.mark.parametrize(
    ("code", "reason"),
    [(403, "Forbidden"), (404, "NotFound"), (500, "InternalError"), (503, "ServiceUnavailable")],
)
def test_injected_statuses_carry_real_reasons(
    core: client.CoreV1Api, kube_api: FakeKubeAPI, code: int, reason: str
) -> None:
    kube_api.fail_next(code, verb="get", message="nope")
    with pytest.raises(ApiException) as caught:
        core.read_namespace("default")
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"], status["message"]) == (code, reason, "nope")
    assert core.read_namespace("default").metadata.name == "default"


def test_429_sends_retry_after(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.create(builders.pod("p"))
    kube_api.fail_next(429, verb="patch", retry_after=7)
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_pod(
            "p", "default", {"metadata": {"labels": {"a": "b"}}}, _content_type=MERGE_PATCH
        )
    assert caught.value.status == 429
    assert caught.value.headers["Retry-After"] == "7"
    # Reads are retried by the client (urllib3 honours Retry-After on GET).
    kube_api.fail_next(429, verb="get", retry_after=1)
    assert core.read_namespaced_pod("p", "default").metadata.name == "p"
    assert [r.status for r in kube_api.requests(verb="get")] == [429, 200]


def test_a_permanent_fault_until_cleared(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.add_fault(Fault(verb="list", path="/pods", status=403, times=None))
    for _ in range(3):
        with pytest.raises(ApiException):
            core.list_namespaced_pod("default")
    core.list_namespace()  # other resources are fine
    kube_api.clear_faults()
    assert core.list_namespaced_pod("default").items == []


def test_delay_trips_the_client_timeout(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    # Every attempt stalls: urllib3 retries a timed-out GET, up to three times.
    kube_api.delay_next(5.0, verb="get", times=None)
    began = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.read_namespace("default", _request_timeout=0.3)
    assert time.monotonic() - began < 3
    kube_api.clear_faults()
    kube_api.delay_next(0.2, verb="get")
    assert core.read_namespace("default", _request_timeout=5).metadata.name == "default"


def test_disconnect_drops_the_connection(core: client.CoreV1Api, kube_api: FakeKubeAPI) -> None:
    kube_api.disconnect_next(verb="list", times=None)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespace()
    kube_api.clear_faults()
    assert len(core.list_namespace().items) == 2


def test_injected_410_on_watch_is_an_error_event(
    core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.fail_next(410, verb="watch")
    with pytest.raises(ApiException) as caught:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=1
            )
        )
    assert caught.value.status == 410


def test_request_log_records_method_path_content_type_and_body(
    apps: client.AppsV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.create(builders.deployment("web"))
    apps.patch_namespaced_deployment(
        "web",
        "default",
        {"spec": {"replicas": 0}},
        field_manager="gpu-guardian",
        _content_type="application/merge-patch+json",
    )
    (record,) = kube_api.requests(path=r"deployments/web$")
    assert record.method == "PATCH"
    assert record.verb == "patch"
    assert record.path == "/apis/apps/v1/namespaces/default/deployments/web"
    assert record.content_type == "application/merge-patch+json"
    assert record.body == {"spec": {"replicas": 0}}
    assert record.field_manager == "gpu-guardian"
    assert record.status == 200
    kube_api.clear_requests()
    assert kube_api.requests() == []


def test_stop_ends_watches_and_closes_every_connection() -> None:
    baseline = {t.ident for t in threading.enumerate()}
    api = FakeKubeAPI.start()
    configuration = client.Configuration(host=api.url)
    ended = threading.Event()
    with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        core.list_namespace()  # leaves a keep-alive connection open

        def consume() -> None:
            for _event in watch.Watch().stream(core.list_namespace, timeout_seconds=60):
                pass
            ended.set()

        consumer = threading.Thread(target=consume)
        consumer.start()
        time.sleep(0.3)
        began = time.monotonic()
        api.stop()
        assert time.monotonic() - began < 5
        consumer.join(timeout=5)
        assert ended.is_set()
    leftover = [t for t in threading.enumerate() if t.ident not in baseline]
    assert leftover == []
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect((api.host, api.port))
    api.stop()  # idempotent
