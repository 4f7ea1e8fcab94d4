"""The `kube` and `api_client` pytest fixtures: the fake Kubernetes API and a real client.

Usage::

    def test_x(kube, api_client):
        kube.create(builders.deployment("web", "ml"))
        KubeRest(api_client).get(...)

``kube`` is a started FakeKubeAPI with the namespaces the controller expects,
serving ``kube_resources`` too (default: LWS, a CRD with a scale subresource), its
objects stamped by ``kube_clock``; ``api_client`` is a real ``kubernetes`` ApiClient
loaded from its kubeconfig. Both are closed at teardown. A test module overrides
``kube_clock`` or ``kube_resources`` to change the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from testbed.kubeapi import FakeKubeAPI, ResourceType, ScaleSpec

# A CRD with a scale subresource, as LeaderWorkerSet declares.
LWS = ResourceType(
    "leaderworkerset.x-k8s.io",
    "v1",
    "LeaderWorkerSet",
    "leaderworkersets",
    scale=ScaleSpec(label_selector="status.hpaPodSelector"),
)
# Object creation time in the fake cluster: a day before the evaluations of the e2e tests.
KUBE_T0 = datetime.fromtimestamp(1_699_900_000, tz=UTC)
NAMESPACES = ("default", "kube-system", "gpu-guardian")


@dataclass
class ManualClock:
    """A clock the test moves by hand."""

    now: datetime = KUBE_T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def kube_clock() -> Callable[[], datetime]:
    return ManualClock()


@pytest.fixture
def kube_resources() -> Sequence[ResourceType]:
    return (LWS,)


@pytest.fixture
def kube(
    kube_clock: Callable[[], datetime], kube_resources: Sequence[ResourceType]
) -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start(
        clock=kube_clock, namespaces=NAMESPACES, extra_resources=kube_resources
    ) as api:
        yield api


@pytest.fixture
def api_client(kube: FakeKubeAPI, tmp_path: Path) -> Iterator[Any]:
    client = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))
    try:
        yield client
    finally:
        client.close()
