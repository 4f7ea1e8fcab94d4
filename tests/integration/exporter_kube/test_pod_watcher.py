"""The exporter's pod cache, driven by the real kubernetes client against the fake API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from exporter.adapters.kube_pods import PodWatcher
from testbed.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.e2e

NODE = "gpu-node-1"


def _pod(name: str, *, node: str = NODE, phase: str = "Running", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": phase},
    }


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start(bookmark_interval_s=0.2) as api:
        yield api


@pytest.fixture
def core(kube: FakeKubeAPI, tmp_path: Path) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(
        config_file=str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    )
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


@pytest.fixture
def running(core: client.CoreV1Api) -> Iterator[PodWatcher]:
    watcher = PodWatcher(core, NODE, watch_timeout_seconds=2, retry_delay=lambda _: 0.05)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    try:
        yield watcher
    finally:
        stop.set()
        watcher.stop()
        thread.join(timeout=10)
        assert not thread.is_alive()


def _eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def _names(watcher: PodWatcher) -> set[str]:
    return {p.name for p in watcher.directory().by_uid.values()}


def test_list_keeps_this_nodes_live_pods_only(kube: FakeKubeAPI, core: client.CoreV1Api) -> None:
    kube.create(_pod("train-0", team="vision"))
    kube.create(_pod("done-0", phase="Succeeded"))
    kube.create(_pod("elsewhere-0", node="other-node"))
    watcher = PodWatcher(core, NODE)

    watcher.relist()

    directory = watcher.directory()
    (pod,) = directory.by_uid.values()
    assert (pod.name, pod.labels, directory.up, directory.synced) == (
        "train-0",
        {"team": "vision"},
        True,
        True,
    )
    assert pod.uid == pod.uid.lower()
    assert pod.container_limits == {"main": {"nvidia.com/gpu": "1"}}
    assert kube.requests(verb="list")[-1].query["fieldSelector"] == "spec.nodeName=gpu-node-1"


def test_watch_follows_adds_changes_and_deletes(kube: FakeKubeAPI, running: PodWatcher) -> None:
    _eventually(lambda: running.directory().synced)

    kube.create(_pod("nb-0"))
    kube.create(_pod("elsewhere-0", node="other-node"))
    _eventually(lambda: _names(running) == {"nb-0"})

    kube.patch("Pod", "nb-0", {"status": {"phase": "Failed"}}, namespace="default")
    _eventually(lambda: _names(running) == set())

    kube.create(_pod("job-0"))
    _eventually(lambda: _names(running) == {"job-0"})
    kube.delete("Pod", "job-0", namespace="default")
    _eventually(lambda: _names(running) == set())


def test_watch_from_an_expired_version_raises_gone(
    kube: FakeKubeAPI, core: client.CoreV1Api
) -> None:
    watcher = PodWatcher(core, NODE, watch_timeout_seconds=2)
    version = watcher.relist()
    kube.create(_pod("later-0"))
    kube.expire_history()

    with pytest.raises(client.ApiException) as info:
        watcher.watch_once(version)

    assert info.value.status == 410


def test_gone_makes_the_running_watcher_list_again(kube: FakeKubeAPI, running: PodWatcher) -> None:
    _eventually(lambda: running.relists == 1)

    kube.fail_next(410, verb="watch", reason="Expired")
    kube.create(_pod("after-expiry-0"))

    _eventually(lambda: running.relists >= 2, timeout=15)
    _eventually(lambda: "after-expiry-0" in _names(running))
    assert running.directory().up


def test_api_outage_keeps_the_last_pods_and_reports_down(
    kube: FakeKubeAPI, running: PodWatcher
) -> None:
    kube.create(_pod("train-0"))
    _eventually(lambda: _names(running) == {"train-0"})

    kube.fail_next(503, path="/api/v1/pods", times=None)
    kube.disconnect_next(times=1)
    _eventually(lambda: not running.directory().up, timeout=15)
    assert _names(running) == {"train-0"}

    kube.clear_faults()
    _eventually(lambda: running.directory().up, timeout=15)
