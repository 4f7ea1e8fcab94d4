"""Fixtures: the remediation adapters on a real client against the fake API.

``kube`` and ``api_client`` come from tests/plugins/kube_fixture.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest


@pytest.fixture
def rest(api_client: Any) -> KubeRest:
    return KubeRest(api_client, timeout=5.0)


@pytest.fixture
def reader(rest: KubeRest) -> KubeReader:
    return KubeReader(rest)


@pytest.fixture
def executor(rest: KubeRest, reader: KubeReader) -> Executor:
    return Executor(rest, reader, instance="test-0")
