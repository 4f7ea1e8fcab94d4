"""The cluster UID the exporter exports (issue #28): the kube-system Namespace's, read
through the real kubernetes client from the fake API server, retried until it is read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from exporter.adapters.kube_cluster import ClusterUidError, read_cluster_uid
from exporter.app.cluster_identity import ClusterUid
from testbed.kubeapi import FakeKubeAPI

pytestmark = pytest.mark.e2e


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start() as api:
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


def test_the_cluster_uid_is_the_kube_system_namespaces(
    kube: FakeKubeAPI, core: client.CoreV1Api
) -> None:
    uid = kube.get("Namespace", "kube-system")["metadata"]["uid"]
    assert uid
    assert read_cluster_uid(core, 5.0) == uid
    [get] = kube.requests(verb="get")
    assert get.path == "/api/v1/namespaces/kube-system"


def test_a_refused_read_is_one_line_and_retried_until_it_works(
    kube: FakeKubeAPI, core: client.CoreV1Api, caplog: pytest.LogCaptureFixture
) -> None:
    kube.fail_next(403, verb="get", path="/namespaces/kube-system$", times=2)
    with pytest.raises(ClusterUidError, match=r"^HTTP 403 Forbidden$"):
        read_cluster_uid(core, 5.0)
    failures: list[int] = []

    def delay(n: int) -> float:
        failures.append(n)
        return 0.0

    uid = ClusterUid(lambda: read_cluster_uid(core, 5.0), delay)
    assert uid.value == ""

    uid.run(threading.Event())

    assert uid.value == kube.get("Namespace", "kube-system")["metadata"]["uid"]
    assert failures == [1]  # one failure, then read: the thread ends
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        (
            "cannot read the cluster UID (Namespace kube-system; needs get on namespaces): "
            "HTTP 403 Forbidden; guardian_exporter_cluster_info is absent until it is"
        )
    ]


def test_stopping_ends_the_retries(core: client.CoreV1Api, kube: FakeKubeAPI) -> None:
    kube.fail_next(503, verb="get", path="/namespaces/kube-system$", times=None)
    stop = threading.Event()

    def delay(_n: int) -> float:
        stop.set()  # asked to stop while waiting to retry
        return 0.0

    uid = ClusterUid(lambda: read_cluster_uid(core, 5.0), delay)
    uid.run(stop)
    assert uid.value == ""
