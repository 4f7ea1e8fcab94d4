"""Fixtures for the fake Kubernetes API's own tests: a started server on the default
namespaces and a real client pointed at it (``kube`` and ``api_client``, with the
controller's namespaces and LWS, come from tests/plugins/kube_fixture.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from testbed.kubeapi import FakeKubeAPI
from tests.plugins.kube_fixture import ManualClock

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def kube_clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def kube_api(kube_clock: ManualClock) -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start(clock=kube_clock, bookmark_interval_s=0.2) as api:
        yield api


@pytest.fixture
def kubeconfig(kube_api: FakeKubeAPI, tmp_path: Path) -> Path:
    return kube_api.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    """A real ``kubernetes`` ApiClient loaded from the fake server's kubeconfig."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_client)


@pytest.fixture
def apps(kube_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(kube_client)


def raw_request(
    api: FakeKubeAPI,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """Send one request with urllib (for bodies the typed client refuses to send)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback URL of the fake server
        f"{api.url}{path}", data=data, method=method, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())
