"""Scenario files: validation with file/line/field errors, shipped examples, the simulator."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from exporter.model.errors import BackendUnavailable, ConfigError
from exporter.model.readings import MigState
from testbed.node.scenario import load_scenario, parse_scenario
from testbed.node.scenario_backend import ScenarioCgroups, SimulatedBackend
from tests.unit.exporter.core.conftest import FakeClock

GPU = "GPU-00000000-0000-4000-8000-000000000000"
POD = "aaaaaaaa-0000-4000-8000-000000000001"
BASE = f"""
version: 1
gpus:
  - uuid: {GPU}
    memory_total: 16GiB
processes:
  - {{pid: 10, gpu: {GPU}, memory: 1GiB, sm_percent: 50, pod_uid: {POD}, container_id: {"c" * 64}}}
  - {{pid: 11, gpu: {GPU}, memory: null, end: 20,
     sm_percent: [{{at: 0, percent: 0}}, {{at: 10, percent: 80}}]}}
"""


def example_paths() -> list[Path]:
    root = resources.files("testbed.node").joinpath("scenarios")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith(".yaml"))


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.name)
def test_shipped_examples_load_and_run(path: Path) -> None:
    scenario = load_scenario(path)
    clock = FakeClock()
    backend = SimulatedBackend(scenario, clock)
    clock.advance(20)
    backend.open()
    assert backend.read().devices


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        (BASE.replace("memory_total: 16GiB", "memory_total: lots"), "gpus.0.memory_total", 5),
        (BASE.replace("version: 1", "version: 1\ncolour: red"), "colour", 3),
        (BASE.replace("pid: 10", "pid: -1"), "processes.0.pid", 7),
        (BASE.replace("sm_percent: 50", "sm_percent: 50, gpu_typo: 1"), "processes.0.gpu_typo", 7),
    ],
)
def test_errors_name_file_line_and_field(text: str, field: str, line: int) -> None:
    with pytest.raises(ConfigError) as info:
        parse_scenario(text, "node.yaml")
    assert info.value.path == "node.yaml"
    assert info.value.field == field
    assert info.value.line == line
    assert str(info.value).startswith(f"node.yaml:{line}: {field}: ")


def test_times_take_the_shared_duration_syntax() -> None:
    text = BASE.replace("end: 20,", "end: 1m30s,").replace("at: 10,", "at: 10s,")
    text += "faults:\n  - {kind: hung_call, start: 1m, hang_seconds: 50ms}\n"
    text += "sample_period_seconds: '0.5'\n"

    scenario = parse_scenario(text)

    assert scenario.processes[1].end == 90.0
    assert [step.at for step in scenario.processes[1].sm_percent] == [0.0, 10.0]  # type: ignore[union-attr]
    assert (scenario.faults[0].start, scenario.faults[0].hang_seconds) == (60.0, 0.05)
    assert scenario.sample_period_seconds == 0.5


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        ("end: 20,", "end: -1,", "processes.1.end", "greater than or equal to 0"),
        (
            "version: 1",
            "version: 1\nfaults: [{kind: gpu_lost, start: 10x}]",
            "faults.0.start",
            "not a valid duration string",
        ),
        (
            "version: 1",
            "version: 1\nsample_period_seconds: 0",
            "sample_period_seconds",
            "greater than 0",
        ),
        ("end: 20,", "end: true,", "processes.1.end", "not a boolean"),
    ],
)
def test_bad_times_name_the_field(old: str, new: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_scenario(BASE.replace(old, new), "node.yaml")
    assert info.value.field is not None
    assert info.value.field.startswith(field)
    assert reason in str(info.value)


def test_unknown_device_reference_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown device 'GPU-nope'"):
        parse_scenario(BASE.replace(f"gpu: {GPU}, memory: null", "gpu: GPU-nope, memory: null"))


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read scenario"):
        load_scenario(tmp_path / "missing.yaml")


def test_bad_yaml_names_the_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_scenario("gpus: [\n  {uuid: x\n", "bad.yaml")
    assert info.value.line is not None


def test_simulator_is_deterministic_for_a_clock() -> None:
    scenario = parse_scenario(BASE)

    def run() -> list[object]:
        clock = FakeClock()
        backend = SimulatedBackend(scenario, clock)
        backend.open()
        out: list[object] = []
        for _ in range(5):
            clock.advance(5)
            out.append(backend.read())
        return out

    assert run() == run()


def test_processes_follow_their_schedule() -> None:
    scenario = parse_scenario(BASE)
    clock = FakeClock()
    backend = SimulatedBackend(scenario, clock)
    backend.open()
    clock.advance(12)
    [dev] = backend.read().devices
    assert {p.pid: p.used_memory_bytes for p in dev.processes} == {10: 1 << 30, 11: None}
    assert dev.utilization_percent == 100.0  # 50 + 80, clamped
    assert dev.process_samples is not None
    assert {s.pid for s in dev.process_samples if s.timestamp_us > (clock.now - 2) * 1e6} == {
        10,
        11,
    }
    clock.advance(10)
    [dev] = backend.read().devices
    assert [p.pid for p in dev.processes] == [10]  # pid 11 ended at 20 s
    assert dev.util_samples
    assert all(s.timestamp_us <= clock.now * 1e6 for s in dev.util_samples)


def test_faults_init_failure_gpu_lost_and_hang() -> None:
    scenario = parse_scenario(
        BASE
        + """faults:
  - {kind: nvml_init_failure, end: 5}
  - {kind: gpu_lost, start: 10, end: 15}
  - {kind: hung_call, start: 20, end: 25, hang_seconds: 0.05}
"""
    )
    clock = FakeClock()
    backend = SimulatedBackend(scenario, clock)
    with pytest.raises(BackendUnavailable) as info:
        backend.open()
    assert info.value.kind == "driver_not_loaded"
    clock.advance(5)
    backend.open()
    clock.advance(5)
    with pytest.raises(BackendUnavailable, match="GPU is lost"):
        backend.read()
    clock.advance(10)
    assert backend.read().devices  # returns after the simulated hang


def test_mig_devices_carry_memory_but_no_utilization() -> None:
    path = next(p for p in example_paths() if p.name == "mig.yaml")
    scenario = load_scenario(path)
    backend = SimulatedBackend(scenario, FakeClock())
    backend.open()
    devices = backend.read().devices
    assert [d.mig for d in devices] == [MigState.ENABLED] + [MigState.INSTANCE] * 3
    assert devices[1].index == "0/0"
    assert devices[1].parent_uuid == devices[0].uuid
    assert all(d.process_samples is None and d.utilization_percent is None for d in devices)
    assert devices[1].processes[0].used_memory_bytes == 12 << 30


def test_scenario_cgroups_follow_the_node_layout() -> None:
    scenario = parse_scenario(
        BASE.replace("version: 1", "version: 1\nnode: {cgroup_driver: cgroupfs, cgroup_version: 1}")
    )
    cgroups = ScenarioCgroups(scenario)
    text = cgroups.read_cgroup(10)
    assert text is not None
    assert f"/kubepods/burstable/pod{POD}/{'c' * 64}" in text
    assert cgroups.read_cgroup(11) is not None  # a host process: no pod in its path
    assert cgroups.read_cgroup(999) is None


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        ("memory_total: 16GiB", "memory_total: true", "gpus.0.memory_total", "not a boolean"),
        ("pid: 10", "pid: '10'", "processes.0.pid", "not the string '10'"),
        ("pid: 10", "pid: true", "processes.0.pid", "not a boolean"),
        ("sm_percent: 50", "sm_percent: '50'", "processes.0.sm_percent", "'50'"),
        ("version: 1", "version: true", "version", "not a boolean"),
        ("version: 1", "version: 1\nnode: {cgroup_version: '2'}", "node.cgroup_version", "string"),
    ],
)
def test_wrong_types_are_refused_not_coerced(old: str, new: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_scenario(BASE.replace(old, new), "node.yaml")
    assert info.value.field is not None
    assert info.value.field.startswith(field)
    assert reason in str(info.value)
