"""Generated dcgm-exporter scrape configs, checked by promtool and run in a real Prometheus."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.engine.dcgm_config import (
    ClusterLabelVia,
    DcgmConfigRequest,
    ServiceDiscovery,
    prometheus_config,
)
from guardian_common.grouping import GroupingOptions
from tests.helpers import prom_get
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e

# dcgm-exporter's exposition: workload pod labels, one pod without the group
# label, and one GPU that no pod holds.
_DEVICE = 'UUID="GPU-{0}",device="nvidia{1}",gpu="{1}",modelName="NVIDIA H100",Hostname="n1"'
DCGM_TEXT = (
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{" + _DEVICE.format("a", 0) + ',container="train",namespace="ml",'
    'pod="train-0",prjId="proj-a",app_kubernetes_io_team="vision"} 87\n'
    "DCGM_FI_DEV_GPU_UTIL{" + _DEVICE.format("b", 1) + ',container="nb",namespace="ml",'
    'pod="notebook-0"} 0\n'
    "DCGM_FI_DEV_GPU_UTIL{" + _DEVICE.format("c", 2) + "} 0\n"
)


class _DcgmHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = DCGM_TEXT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def dcgm_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DcgmHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _request(group_label: str, **kwargs: Any) -> DcgmConfigRequest:
    return DcgmConfigRequest(
        grouping=GroupingOptions(group_label=group_label, cluster_name=kwargs.pop("cluster", "")),
        **kwargs,
    )


def _promtool_check(binaries: PrometheusBinaries, config: dict[str, Any], path: Path) -> None:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = subprocess.run(
        [binaries.promtool, "check", "config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("via", list(ClusterLabelVia))
@pytest.mark.parametrize("group_label", ["prjId", "app.kubernetes.io/team"])
def test_promtool_accepts_generated_configs(
    prometheus_binaries: PrometheusBinaries, tmp_path: Path, group_label: str, via: ClusterLabelVia
) -> None:
    file_sd = prometheus_config(
        _request(
            group_label,
            cluster="prod",
            cluster_via=via,
            service_discovery=ServiceDiscovery.FILE,
            file_sd_dir=str(tmp_path),
        )
    )
    for job in file_sd["scrape_configs"]:
        (tmp_path / f"{job['job_name']}.json").write_text("[]")
    _promtool_check(prometheus_binaries, file_sd, tmp_path / "file.yml")

    # Debian's Prometheus is built without kubernetes_sd, so promtool cannot parse
    # that block. Check everything else by swapping only the discovery block.
    k8s = prometheus_config(_request(group_label, cluster="prod", cluster_via=via))
    for job in k8s["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs")[0]["role"] == "pod"
        job["static_configs"] = [{"targets": ["127.0.0.1:9400"]}]
    _promtool_check(prometheus_binaries, k8s, tmp_path / "k8s.yml")


def _wait_for_series(url: str, query: str, count: int, timeout: float = 30.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    result: list[Any] = []
    while time.monotonic() < deadline:
        result = prom_get(url, "/api/v1/query", query=query)["result"]
        if len(result) >= count:
            return result
        time.sleep(0.2)
    raise AssertionError(f"{query}: wanted {count} series, got {result}")


@pytest.mark.parametrize(
    ("group_label", "expected_group"), [("prjId", "proj-a"), ("app.kubernetes.io/team", "vision")]
)
def test_real_prometheus_stores_gpu_group_with_default_bucket(
    prometheus: PrometheusFactory,
    dcgm_endpoint: str,
    tmp_path: Path,
    group_label: str,
    expected_group: str,
) -> None:
    config = prometheus_config(
        _request(
            group_label,
            cluster="prod",
            cluster_via=ClusterLabelVia.RELABEL,
            service_discovery=ServiceDiscovery.FILE,
            file_sd_dir=str(tmp_path),
        )
    )
    # The target carries the exporter's own pod name, as kubernetes_sd would;
    # honor_labels must keep the workload's pod label instead of exported_pod.
    (tmp_path / "dcgm-exporter.json").write_text(
        json.dumps([{"targets": [dcgm_endpoint], "labels": {"node": "n1", "pod": "dcgm-xyz"}}])
    )
    (tmp_path / "gpu-guardian-exporter.json").write_text("[]")
    for job in config["scrape_configs"]:
        job["scrape_interval"] = "1s"

    prom = prometheus(scrape_configs=config["scrape_configs"], scrape_interval="1s")
    series = _wait_for_series(prom.url, "DCGM_FI_DEV_GPU_UTIL", 3)

    by_gpu = {s["metric"]["gpu"]: s["metric"] for s in series}
    assert by_gpu["0"]["gpu_group"] == expected_group
    assert by_gpu["0"]["pod"] == "train-0"
    assert by_gpu["1"]["gpu_group"] == "unassigned"
    assert by_gpu["1"]["pod"] == "notebook-0"
    # A GPU no pod holds gets no group, and not the exporter's own pod either.
    assert "gpu_group" not in by_gpu["2"]
    assert "pod" not in by_gpu["2"]
    assert all("exported_pod" not in labels for labels in by_gpu.values())
    assert {labels["cluster"] for labels in by_gpu.values()} == {"prod"}
    assert {labels["node"] for labels in by_gpu.values()} == {"n1"}
