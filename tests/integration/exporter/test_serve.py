"""`guardian-exporter serve` as a real process: simulated scenarios and the stub NVML library."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

from testbed.node.stubnvml import SCENARIO_ENV
from tests.integration.exporter.conftest import EXPORTER, Running, Series

pytestmark = pytest.mark.e2e

SCENARIOS = Path(str(resources.files("testbed.node").joinpath("scenarios")))
FIXTURE_PROC = Path(__file__).resolve().parents[2] / "fixtures" / "exporter" / "proc"
GPU = "GPU-aaaaaaaa-0000-4000-8000-000000000001"
# Fixture pids: 1006 is a v2 systemd/containerd pod, 1017 a host service.
POD_1006 = "000003ee-1b2c-4d3e-8f90-a1b2c3d4e5ee"
STUB = f"""driver 550.54.15
gpu {GPU} 85899345920 2147483648 37 41 75500 123456 NVIDIA A100-SXM4-80GB
proc {GPU} c 1006 1073741824
proc {GPU} c 1017 536870912
putil {GPU} 1006 1700000000000000 40
"""


def names(series: Series) -> set[str]:
    return set(series)


def value(series: Series, name: str, **labels: str) -> float:
    hits = [v for lbl, v in series.get(name, []) if labels.items() <= lbl.items()]
    assert len(hits) == 1, (name, labels, series.get(name))
    return hits[0]


def test_simulated_scenario_serves_real_metrics_and_stops_on_sigterm(
    exporter_process: Callable[..., Running],
) -> None:
    running = exporter_process(
        "--scenario", str(SCENARIOS / "shared-node.yaml"),
        "--interval", "0.5", env={"NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    got = running.wait_for(lambda s: "guardian_gpu_busy_seconds_total" in s)
    assert value(got, "guardian_exporter_nvml_up") == 1
    assert {lbl["node"] for lbl, _ in got["guardian_gpu_info"]} == {"gpu-node-1"}
    pods = {lbl["pod_uid"] for lbl, _ in got["guardian_pod_gpu_memory_used_bytes"]}
    assert pods == {
        "3f6e1a2b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
        "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
        "8c7b6a59-4837-4261-9504-a3b2c1d0e9f8",
    }
    uuid = "GPU-7d3b9b5f-4a2c-4d3e-8f90-1b2c3d4e5f60"
    assert value(got, "guardian_gpu_unattributed_memory_used_bytes", uuid=uuid) == 4 << 30
    assert running.get("/healthz")[0] == 200
    running.proc.send_signal(signal.SIGTERM)
    assert running.proc.wait(10) == 0


def test_cluster_name_is_on_every_series_also_without_kubernetes(
    exporter_process: Callable[..., Running],
) -> None:
    running = exporter_process(
        "--scenario", str(SCENARIOS / "shared-node.yaml"),
        "--interval", "0.5", "--kubernetes", "off", "--cluster-name", "prod-eu",
        env={"NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    got = running.wait_for(lambda s: "guardian_gpu_busy_seconds_total" in s)
    assert {"guardian_gpu_info", "guardian_pod_gpu_memory_used_bytes"} <= names(got)
    assert "guardian_exporter_nvml_up" in names(got)
    for name, samples in got.items():
        for labels, _ in samples:
            assert (labels.get("cluster"), labels.get("node")) == ("prod-eu", "gpu-node-1"), name
    # No pod names without the API: containers are told apart by their ID alone.
    pods = got["guardian_pod_gpu_memory_used_bytes"]
    assert {lbl["container"] for lbl, _ in pods} == {""}
    assert {lbl["container_id"] for lbl, _ in pods} == {
        "9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "1f2e3d4c5b6a79880a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f",
        "2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a",
    }


def test_idle_facts_are_served_with_their_labels(
    exporter_process: Callable[..., Running],
) -> None:
    """Issue #33: the facts an idle rule reads as one sample, with short peak windows."""
    running = exporter_process(
        "--scenario", str(SCENARIOS / "shared-node.yaml"), "--interval", "0.3",
        "--memory-peak-window", "1s", "--activity-peak-window", "1500ms",
        "--activity-floor", "0.05", env={"NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    got = running.wait_for(
        lambda s: (
            bool(s.get("guardian_gpu_memory_used_peak_bytes"))
            and bool(s.get("guardian_gpu_utilization_peak_ratio"))
            and bool(s.get("guardian_gpu_last_active_timestamp_seconds"))
        ),
        timeout=30,
    )
    devices = {(lbl["gpu"], lbl["uuid"]) for lbl, _ in got["guardian_gpu_utilization_ratio"]}
    for name in (
        "guardian_gpu_last_active_timestamp_seconds",
        "guardian_gpu_observed_since_timestamp_seconds",
        "guardian_gpu_memory_used_peak_bytes",
        "guardian_gpu_utilization_peak_ratio",
    ):
        for labels, _ in got[name]:
            assert (labels["gpu"], labels["uuid"]) in devices, name
    window = {lbl["window"] for lbl, _ in got["guardian_gpu_memory_used_peak_bytes"]}
    assert window == {"1s"}
    window = {lbl["window"] for lbl, _ in got["guardian_gpu_utilization_peak_ratio"]}
    assert window == {"1s500ms"}
    since = got["guardian_gpu_observed_since_timestamp_seconds"]
    assert {(lbl["gpu"], lbl["uuid"]) for lbl, _ in since} == devices
    pods = {tuple(sorted(lbl.items())) for lbl, _ in got["guardian_pod_gpu_processes"]}
    observed = got["guardian_pod_gpu_observed_since_timestamp_seconds"]
    assert {tuple(sorted(lbl.items())) for lbl, _ in observed} == pods


def test_a_bad_activity_floor_stops_serve_with_one_line_naming_the_flag() -> None:
    done = subprocess.run(
        [EXPORTER, "serve", "--activity-floor", "1.5"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        (
            "guardian-exporter: configuration error: --activity-floor: "
            "Input should be less than or equal to 1 (got 1.5)"
        )
    ]


def test_cluster_name_is_on_the_health_series_while_nvml_is_down(
    exporter_process: Callable[..., Running], tmp_path: Path
) -> None:
    running = exporter_process(
        "--interval", "0.3", "--cluster-name", "prod-eu",
        env={"LD_LIBRARY_PATH": str(tmp_path), "NODE_NAME": "gpu-node-1"},
    )  # fmt: skip
    got = running.series()
    assert value(got, "guardian_exporter_nvml_up", cluster="prod-eu", node="gpu-node-1") == 0
    assert all(lbl.get("cluster") == "prod-eu" for samples in got.values() for lbl, _ in samples)


def test_attribute_command_prints_the_fixture_answers() -> None:
    expected = json.loads((FIXTURE_PROC.parent / "expected.json").read_text())
    out = subprocess.run(
        [EXPORTER, "attribute", "--proc-root", str(FIXTURE_PROC)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    printed = {str(r["pid"]): (r["pod_uid"], r["container_id"]) for r in json.loads(out)}
    assert printed == {pid: (e["pod_uid"], e["container_id"]) for pid, e in expected.items()}


def test_nvml_backend_through_the_stub_library(
    exporter_process: Callable[..., Running], stub_dir: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "stub.txt"
    scenario.write_text(STUB)
    running = exporter_process(
        "--proc-root", str(FIXTURE_PROC), "--interval", "0.3",
        env={"LD_LIBRARY_PATH": str(stub_dir), SCENARIO_ENV: str(scenario)},
    )  # fmt: skip
    got = running.wait_for(lambda s: "guardian_gpu_info" in s)
    assert value(got, "guardian_gpu_power_watts", uuid=GPU) == 75.5
    assert value(got, "guardian_gpu_energy_joules_total", uuid=GPU) == 123.456
    assert value(got, "guardian_pod_gpu_memory_used_bytes", pod_uid=POD_1006) == 1 << 30
    # The one sample is read by the first cycle only, so later ones read 0; its time stays.
    assert value(got, "guardian_pod_gpu_sm_utilization_ratio", pod_uid=POD_1006) in (0.4, 0.0)
    assert value(got, "guardian_pod_gpu_last_active_timestamp_seconds", pod_uid=POD_1006) == 1.7e9
    assert value(got, "guardian_gpu_unattributed_memory_used_bytes", uuid=GPU) == 512 << 20
    # The pod's process exits: its series go with the next collection.
    scenario.write_text(STUB.replace(f"proc {GPU} c 1006 1073741824\n", ""))
    got = running.wait_for(lambda s: not s.get("guardian_pod_gpu_memory_used_bytes"))
    assert "guardian_pod_gpu_processes" not in got or not got["guardian_pod_gpu_processes"]
    # The GPU falls off the bus mid-cycle, then comes back: down, then re-initialised.
    scenario.write_text(STUB + f"fail nvmlDeviceGetPowerUsage {GPU} 15\n")
    got = running.wait_for(lambda s: value(s, "guardian_exporter_nvml_up") == 0)
    assert "guardian_gpu_info" not in got or not got["guardian_gpu_info"]
    assert value(got, "guardian_exporter_errors_total", op="power_usage", kind="gpu_is_lost") >= 1
    scenario.write_text(STUB)
    running.wait_for(lambda s: value(s, "guardian_exporter_nvml_up") == 1, timeout=30)


def test_missing_library_keeps_serving_with_nvml_down(
    exporter_process: Callable[..., Running], tmp_path: Path
) -> None:
    running = exporter_process("--interval", "0.3", env={"LD_LIBRARY_PATH": str(tmp_path)})
    got = running.series()
    assert value(got, "guardian_exporter_nvml_up") == 0
    assert value(got, "guardian_exporter_errors_total", op="init", kind="library_not_found") >= 1
    assert running.get("/healthz")[0] == 200
    assert running.proc.poll() is None


def test_a_hung_nvml_call_does_not_freeze_metrics(
    exporter_process: Callable[..., Running], stub_dir: Path, tmp_path: Path
) -> None:
    scenario = tmp_path / "stub.txt"
    scenario.write_text(STUB)
    running = exporter_process(
        "--proc-root", str(FIXTURE_PROC),
        "--interval", "0.3", "--collect-timeout", "0.5",
        env={"LD_LIBRARY_PATH": str(stub_dir), SCENARIO_ENV: str(scenario)},
    )  # fmt: skip
    running.wait_for(lambda s: "guardian_gpu_info" in s)
    scenario.write_text(STUB + f"hang nvmlDeviceGetPowerUsage {GPU} 10000\n")
    got = running.wait_for(lambda s: value(s, "guardian_exporter_snapshot_stale") == 1)
    assert value(got, "guardian_gpu_memory_used_bytes", uuid=GPU) == 2147483648  # last good
    # Served from the snapshot while the call is still stuck, not from NVML.
    assert running.get("/metrics", timeout=5)[0] == 200
    scenario.write_text(STUB)
    running.wait_for(lambda s: value(s, "guardian_exporter_snapshot_stale") == 0, timeout=30)
