"""Fixtures: the fake Kubernetes API, a real client on it, and the remediation adapters."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.sim.kubeapi import FakeKubeAPI, ResourceType, ScaleSpec

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


@dataclass
class Clock:
    now: datetime = KUBE_T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI.start(
        clock=Clock(), namespaces=("default", "kube-system", "gpu-guardian"), extra_resources=[LWS]
    ) as api:
        yield api


@pytest.fixture
def api_client(kube: FakeKubeAPI, tmp_path: Path) -> Iterator[Any]:
    client = config.new_client_from_config(config_file=str(kube.write_kubeconfig(tmp_path / "kc")))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def rest(api_client: Any) -> KubeRest:
    return KubeRest(api_client, timeout=5.0)


@pytest.fixture
def reader(rest: KubeRest) -> KubeReader:
    return KubeReader(rest)


@pytest.fixture
def executor(rest: KubeRest, reader: KubeReader) -> Executor:
    return Executor(rest, reader, instance="test-0")
