"""A real Prometheus scrapes a real exporter: the exposition parses and the series behave."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import prom_get
from tests.integration.exporter.conftest import Running

pytestmark = pytest.mark.e2e

SCENARIOS = Path(str(resources.files("testbed.node").joinpath("scenarios")))


def wait_query(
    url: str, query: str, check: Callable[[list[Any]], bool], timeout: float = 40
) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        result: list[Any] = prom_get(url, "/api/v1/query", query=query)["result"]
        if check(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{query}: {result}")
        time.sleep(0.5)


def test_prometheus_scrapes_per_pod_series_and_busy_counter(
    exporter_process: Callable[..., Running], prometheus: Any
) -> None:
    running = exporter_process(
        "--scenario", str(SCENARIOS / "shared-node.yaml"),
        "--interval", "0.5", env={"NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    target = running.url.removeprefix("http://")
    prom = prometheus(
        scrape_interval="1s",
        scrape_configs=[
            {"job_name": "guardian-exporter", "static_configs": [{"targets": [target]}]}
        ],
    )
    wait_query(
        prom.url, 'up{job="guardian-exporter"}', lambda r: bool(r) and r[0]["value"][1] == "1"
    )
    pods = wait_query(
        prom.url,
        "count by (pod_uid) (guardian_pod_gpu_memory_used_bytes)",
        lambda r: len(r) == 3,
    )
    assert {p["metric"]["pod_uid"] for p in pods} == {
        "3f6e1a2b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
        "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
        "8c7b6a59-4837-4261-9504-a3b2c1d0e9f8",
    }
    # GPU 0 runs the 85 % job: once a few samples are in, busy time grows at 0.85 s per second.
    wait_query(
        prom.url,
        'rate(guardian_gpu_busy_seconds_total{gpu="0"}[6s])',
        lambda r: bool(r) and 0.75 < float(r[0]["value"][1]) < 0.95,
    )
    info = prom_get(prom.url, "/api/v1/query", query="guardian_gpu_info")["result"]
    assert {i["metric"]["node"] for i in info} == {"gpu-node-1"}


def test_with_a_cluster_name_device_and_pod_series_join_on_cluster(
    exporter_process: Callable[..., Running], prometheus: Any
) -> None:
    running = exporter_process(
        "--scenario", str(SCENARIOS / "shared-node.yaml"),
        "--interval", "0.5", "--cluster-name", "prod-eu", env={"NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    prom = prometheus(
        scrape_interval="1s",
        scrape_configs=[
            {
                "job_name": "guardian-exporter",
                "honor_labels": True,
                "static_configs": [{"targets": [running.url.removeprefix("http://")]}],
            }
        ],
    )
    # The packs join device and pod series this way (GpuIdle, GpuMemoryUnderutilized).
    joined = wait_query(
        prom.url,
        "guardian_gpu_memory_used_bytes * on (cluster, node, uuid) group_right ()"
        " count by (cluster, node, uuid) (guardian_pod_gpu_memory_used_bytes)",
        lambda r: len(r) == 2,
    )
    assert {j["metric"]["cluster"] for j in joined} == {"prod-eu"}
    unlabelled = prom_get(
        prom.url, "/api/v1/query", query='count({__name__=~"guardian_.+", cluster!="prod-eu"})'
    )["result"]
    assert unlabelled == []
