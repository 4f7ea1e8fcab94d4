"""The NVML backend end to end: the real nvidia-ml-py calling the stub libnvidia-ml.so.1."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exporter.adapters.nvml import NvmlBackend
from exporter.model.errors import BackendUnavailable
from exporter.model.readings import BackendError, MigState, ProcessKind

WriteStub = Callable[[str], Path]
A = "GPU-aaaaaaaa-0000-4000-8000-000000000001"
B = "GPU-bbbbbbbb-0000-4000-8000-000000000002"
M = "MIG-cccccccc-0000-4000-8000-000000000003"
T0 = 1_700_000_000_000_000
NODE = f"""
driver 550.54.15
gpu {A} 85899345920 2147483648 37 41 75500 123456 NVIDIA A100-SXM4-80GB
gpu {B} 42949672960 1073741824 0 35 60000 5000 NVIDIA A100-SXM4-40GB
mig {M} 10737418240 536870912 NVIDIA A100-SXM4-40GB MIG 1g.10gb
proc {A} c 4242 1048576
proc {A} g 4242 1048576
proc {A} g 4300 na
proc {A} m 4400 4096
proc {A} c 0 1
proc {M} c 5000 2048
putil {A} 4242 {T0} 55
putil {A} 4242 {T0 + 500_000} 250
sample {A} {T0} 20
sample {A} {T0 + 1_000_000} 60
"""


@pytest.fixture
def backend(stub_nvml: WriteStub) -> Iterator[Callable[[str], NvmlBackend]]:
    opened: list[NvmlBackend] = []

    def make(text: str) -> NvmlBackend:
        stub_nvml(text)
        b = NvmlBackend()
        b.open()
        opened.append(b)
        return b

    yield make
    for b in opened:
        b.close()


def test_reads_every_field_keyed_by_uuid(backend: Callable[[str], NvmlBackend]) -> None:
    reading = backend(NODE).read()
    assert reading.driver_version == "550.54.15"
    a, b, mig = reading.devices
    assert (a.index, a.uuid, a.model, a.mig) == ("0", A, "NVIDIA A100-SXM4-80GB", MigState.DISABLED)
    assert (a.memory_used_bytes, a.memory_total_bytes) == (2147483648, 85899345920)
    assert a.utilization_percent == 37
    assert a.temperature_celsius == 41
    assert a.power_watts == 75.5  # mW -> W
    assert a.energy_joules == 123.456  # mJ -> J
    assert [(s.timestamp_us, s.percent) for s in a.util_samples or ()] == [
        (T0, 20),
        (T0 + 1_000_000, 60),
    ]
    assert [(p.pid, p.used_memory_bytes, p.kind) for p in a.processes] == [
        (4242, 1048576, ProcessKind.COMPUTE),
        (4242, 1048576, ProcessKind.GRAPHICS),
        (4300, None, ProcessKind.GRAPHICS),  # NVML_VALUE_NOT_AVAILABLE: unknown, not 0
        (4400, 4096, ProcessKind.MPS),
    ]
    assert BackendError("compute_processes", "invalid_pid") in reading.errors  # pid 0 dropped
    assert [(s.pid, s.sm_percent) for s in a.process_samples or ()] == [(4242, 55), (4242, 250)]
    assert b.mig is MigState.ENABLED
    assert b.utilization_percent is None
    assert (mig.index, mig.uuid, mig.mig, mig.parent_uuid) == ("1/0", M, MigState.INSTANCE, B)
    assert mig.memory_total_bytes == 10737418240
    assert [p.pid for p in mig.processes] == [5000]
    assert mig.process_samples is None


def test_last_seen_timestamps_make_the_next_cycle_read_only_new_samples(
    backend: Callable[[str], NvmlBackend],
) -> None:
    nvml = backend(NODE)
    nvml.read()
    a = nvml.read().devices[0]
    # NOT_FOUND from process utilization and samples means "nothing new", so () not None.
    assert a.process_samples == ()
    assert a.util_samples == ()


def test_not_supported_omits_the_series_and_logs_once(
    backend: Callable[[str], NvmlBackend], caplog: pytest.LogCaptureFixture
) -> None:
    text = (
        NODE + f"fail nvmlDeviceGetPowerUsage {A} 3\nfail nvmlDeviceGetTotalEnergyConsumption * 3\n"
    )
    text += f"fail nvmlDeviceGetTemperatureV {A} 4\nfail nvmlDeviceGetTemperature {A} 4\n"
    nvml = backend(text)
    with caplog.at_level(logging.INFO, logger="exporter.adapters.nvml"):
        first = nvml.read()
        second = nvml.read()
    a = second.devices[0]
    assert a.power_watts is None
    assert a.energy_joules is None
    assert a.temperature_celsius is None
    assert BackendError("power_usage", "not_supported") in first.errors
    assert BackendError("temperature", "no_permission") in first.errors
    assert not [e for e in second.errors if e.kind in {"not_supported", "no_permission"}]
    assert sum("power_usage is not available" in r.getMessage() for r in caplog.records) == 1


def test_gpu_lost_in_the_middle_of_a_cycle_raises_backend_unavailable(
    backend: Callable[[str], NvmlBackend],
) -> None:
    # GPU A reads fine; GPU B falls off the bus at its memory query.
    nvml = backend(NODE + f"fail nvmlDeviceGetMemoryInfo_v2 {B} 15\n")
    with pytest.raises(BackendUnavailable) as info:
        nvml.read()
    assert (info.value.op, info.value.kind) == ("memory_info", "gpu_is_lost")


def test_gpu_lost_on_a_later_cycle_then_recovery_after_reinit(
    stub_nvml: WriteStub, backend: Callable[[str], NvmlBackend]
) -> None:
    nvml = backend(NODE + "fail nvmlDeviceGetCount_v2 * 15 1\n")
    assert len(nvml.read().devices) == 3
    with pytest.raises(BackendUnavailable):
        nvml.read()
    nvml.close()
    stub_nvml(NODE)
    nvml.open()
    assert len(nvml.read().devices) == 3


def test_process_list_that_grows_between_calls_is_read_again(
    backend: Callable[[str], NvmlBackend], caplog: pytest.LogCaptureFixture
) -> None:
    nvml = backend(NODE + f"grow {A} 100\n")
    with caplog.at_level(logging.DEBUG, logger="exporter.adapters.nvml"):
        reading = nvml.read()
    assert any("list grew" in r.getMessage() for r in caplog.records)
    assert [p.pid for p in reading.devices[0].processes if p.kind is ProcessKind.COMPUTE] == [4242]
    assert not [e for e in reading.errors if e.kind == "insufficient_size"]


def test_process_list_that_never_settles_is_counted_not_fatal(
    backend: Callable[[str], NvmlBackend],
) -> None:
    text = NODE + f"fail nvmlDeviceGetComputeRunningProcesses_v3 {A} 7\n"
    reading = backend(text).read()
    assert BackendError("compute_processes", "insufficient_size") in reading.errors
    assert 4242 in [p.pid for p in reading.devices[0].processes]  # the graphics list still read


def test_falls_back_to_the_older_process_utilization_call(
    backend: Callable[[str], NvmlBackend],
) -> None:
    nvml = backend(NODE + "fail nvmlDeviceGetProcessesUtilizationInfo * 13\n")
    a = nvml.read().devices[0]
    assert [(s.pid, s.sm_percent) for s in a.process_samples or ()] == [(4242, 55), (4242, 250)]


def test_falls_back_to_memory_info_v1(backend: Callable[[str], NvmlBackend]) -> None:
    nvml = backend(NODE + "fail nvmlDeviceGetMemoryInfo_v2 * 13\n")
    assert nvml.read().devices[0].memory_total_bytes == 85899345920


def test_init_failure_is_backend_unavailable(backend: Callable[[str], NvmlBackend]) -> None:
    with pytest.raises(BackendUnavailable) as info:
        backend("init 9\n" + NODE)
    assert (info.value.op, info.value.kind) == ("init", "driver_not_loaded")
