"""List with selectors and pages, and watch as a chunked stream, through the real client."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from testbed.kubeapi import FakeKubeAPI, builders
from tests.integration.testbed.conftest import raw_request

pytestmark = pytest.mark.e2e


@pytest.fixture
def fleet(kube_api: FakeKubeAPI) -> FakeKubeAPI:
    kube_api.create(builders.pod("a", "ml", node="n1", labels={"app": "train", "gpu": "a100"}))
    kube_api.create(builders.pod("b", "ml", node="n1", phase="Succeeded", labels={"app": "eval"}))
    kube_api.create(builders.pod("c", "ml", node="n2", labels={"app": "train"}))
    kube_api.create(builders.pod("d", "web", node="n1", labels={"app": "serve", "gpu": "t4"}))
    return kube_api


def _names(pods: Any) -> list[str]:
    return [pod.metadata.name for pod in pods.items]


@pytest.mark.usefixtures("fleet")
@pytest.mark.parametrize(
    ("label_selector", "field_selector", "expected"),
    [
        ("app=train", None, ["a", "c"]),
        ("app!=train", None, ["b", "d"]),
        ("app in (eval,serve)", None, ["b", "d"]),
        ("app notin (train,eval)", None, ["d"]),
        ("gpu", None, ["a", "d"]),
        ("!gpu", None, ["b", "c"]),
        (None, "spec.nodeName=n1", ["a", "b", "d"]),
        (None, "spec.nodeName=n1,status.phase!=Succeeded", ["a", "d"]),
        (None, "status.phase=Succeeded", ["b"]),
        (None, "metadata.name=c", ["c"]),
        (None, "metadata.namespace=web", ["d"]),
        ("app=train", "spec.nodeName=n1", ["a"]),
    ],
)
def test_list_pods_with_selectors(
    core: client.CoreV1Api,
    label_selector: str | None,
    field_selector: str | None,
    expected: list[str],
) -> None:
    kwargs = {
        k: v
        for k, v in (("label_selector", label_selector), ("field_selector", field_selector))
        if v is not None
    }
    assert _names(core.list_pod_for_all_namespaces(**kwargs)) == expected


@pytest.mark.usefixtures("fleet")
def test_namespaced_list_and_bad_selector(core: client.CoreV1Api) -> None:
    assert _names(core.list_namespaced_pod("ml")) == ["a", "b", "c"]
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("ml", label_selector="app in train")
    assert caught.value.status == 400


@pytest.mark.usefixtures("fleet")
def test_list_pages_with_limit_and_continue(core: client.CoreV1Api) -> None:
    first = core.list_pod_for_all_namespaces(limit=3)
    assert _names(first) == ["a", "b", "c"]
    assert first.metadata.remaining_item_count == 1
    second = core.list_pod_for_all_namespaces(limit=3, _continue=first.metadata._continue)
    assert _names(second) == ["d"]
    assert second.metadata._continue is None


def test_list_reports_the_current_resource_version(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    assert core.list_namespaced_pod("ml").metadata.resource_version == fleet.resource_version


def test_watch_from_a_resource_version_replays_later_events(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    listed = core.list_namespaced_pod("ml", field_selector="spec.nodeName=n1")
    fleet.patch("Pod", "a", {"metadata": {"labels": {"owner": "x"}}}, "ml")
    fleet.create(builders.pod("e", "ml", node="n1"))
    fleet.create(builders.pod("f", "ml", node="n2"))  # another node: not in this watch
    fleet.delete("Pod", "b", "ml")
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "ml",
            field_selector="spec.nodeName=n1",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "e"),
        ("DELETED", "b"),
    ]
    assert isinstance(events[0]["object"], client.V1Pod)
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert versions == sorted(versions)
    assert versions[0] > int(listed.metadata.resource_version)


def test_watch_without_a_version_starts_with_the_current_state(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    events = list(watch.Watch().stream(core.list_namespaced_pod, "ml", timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "c"),
    ]


def test_watch_delivers_live_events_and_selection_changes(
    core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    kube_api.create(builders.pod("p", labels={"app": "train"}))
    start = kube_api.resource_version
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()

    def consume() -> None:
        for event in stream.stream(
            core.list_namespaced_pod,
            "default",
            label_selector="app=train",
            resource_version=start,
            timeout_seconds=10,
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                stream.stop()

    consumer = threading.Thread(target=consume)
    consumer.start()
    time.sleep(0.3)  # let the watch connect; the events below arrive live
    kube_api.create(builders.pod("q", labels={"app": "train"}))
    kube_api.patch("Pod", "p", {"metadata": {"labels": {"app": "idle"}}})
    kube_api.patch("Pod", "p", {"metadata": {"labels": {"app": "train"}}})
    consumer.join(timeout=10)
    assert not consumer.is_alive()
    # Leaving the selection reads as DELETED, entering it as ADDED, as upstream.
    assert seen == [("ADDED", "q"), ("DELETED", "p"), ("ADDED", "p")]


def test_expired_version_raises_410_from_watch_stream(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    old = core.list_namespaced_pod("ml").metadata.resource_version
    fleet.create(builders.pod("late", "ml"))
    fleet.expire_history()
    with pytest.raises(ApiException) as with_timeout:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "ml", resource_version=old, timeout_seconds=5
            )
        )
    assert with_timeout.value.status == 410
    assert "too old resource version" in str(with_timeout.value.reason)
    # Without a timeout the client retries once from the same version, then raises.
    fleet.clear_requests()
    with pytest.raises(ApiException) as retried:
        list(watch.Watch().stream(core.list_namespaced_pod, "ml", resource_version=old))
    assert retried.value.status == 410
    assert len(fleet.requests(verb="watch")) == 2
    # The recovery real code does: list again, then watch from the new version.
    relisted = core.list_namespaced_pod("ml")
    fleet.create(builders.pod("after", "ml"))
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "ml",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "after")]


def test_history_limit_expires_old_versions() -> None:
    with FakeKubeAPI.start(history_limit=2) as api:
        api.create(builders.pod("x"))
        old = api.resource_version
        for name in ("y", "z", "w"):
            api.create(builders.pod(name))
        status, body = raw_request(
            api,
            "GET",
            f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={old}&timeoutSeconds=1",
        )
    # The expiry arrives as an ERROR event in a 200 stream, as the real server sends it.
    assert status == 200
    assert body["type"] == "ERROR"
    assert body["object"]["code"] == 410
    assert body["object"]["reason"] == "Expired"


def test_watch_timeout_closes_the_stream_with_a_bookmark(
    core: client.CoreV1Api, kube_api: FakeKubeAPI
) -> None:
    began = time.monotonic()
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "default",
            resource_version=kube_api.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    )
    elapsed = time.monotonic() - began
    assert 0.9 <= elapsed < 5
    assert events
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["raw_object"]["metadata"]["resourceVersion"] == kube_api.resource_version


def test_send_initial_events_ends_with_a_marked_bookmark(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "web",
            send_initial_events=True,
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    )
    assert (events[0]["type"], events[0]["object"].metadata.name) == ("ADDED", "d")
    marker = events[1]
    assert marker["type"] == "BOOKMARK"
    annotations = marker["raw_object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


def _wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def test_shared_informer_follows_changes_and_relists_after_410(
    core: client.CoreV1Api, fleet: FakeKubeAPI
) -> None:
    from kubernetes.informer import SharedInformer

    informer = SharedInformer(core.list_pod_for_all_namespaces, field_selector="spec.nodeName=n1")
    informer.start()
    try:

        def cached() -> set[str]:
            return {pod.metadata.name for pod in informer.cache.list()}

        _wait_for(lambda: cached() == {"a", "b", "d"})
        fleet.create(builders.pod("e", "ml", node="n1"))
        fleet.delete("Pod", "b", "ml")
        _wait_for(lambda: cached() == {"a", "d", "e"})

        # The stream ends and its version has expired: the client retries once, then the
        # informer lists again from scratch and watches from the new version.
        fleet.clear_requests()
        fleet.fail_next(410, verb="watch", times=2)
        fleet.end_watches()
        _wait_for(lambda: len(fleet.requests(verb="watch")) >= 3)
        verbs = [r.verb for r in fleet.requests()]
        assert verbs[:4] == ["watch", "watch", "list", "watch"]
        fleet.create(builders.pod("g", "web", node="n1"))
        _wait_for(lambda: cached() == {"a", "d", "e", "g"})
    finally:
        informer.stop()
