"""Pure engine logic: utilization arithmetic and snapshot building."""

from __future__ import annotations

import pytest

from exporter.engine.snapshot import BuilderState, build_snapshot
from exporter.engine.utilization import (
    clamp_percent,
    integrate_busy,
    last_active_us_by_pid,
    mean_sm_by_pid,
    summarize_process_samples,
)
from exporter.engine.vgpu import VgpuRatios
from exporter.model.attribution import CgroupIdentity
from exporter.model.readings import (
    DeviceReading,
    MigState,
    NodeReading,
    ProcessKind,
    ProcessReading,
    ProcessUtilSample,
    UtilSample,
)
from exporter.model.snapshot import ExporterHealth

HEALTH = ExporterHealth(
    nvml_up=True, last_success_timestamp_seconds=1.0, stage_seconds=(), errors=()
)
POD_A = CgroupIdentity("aaaaaaaa-0000-4000-8000-000000000001", "c" * 64)
POD_B = CgroupIdentity("bbbbbbbb-0000-4000-8000-000000000002", "d" * 64)
GiB = 1 << 30


@pytest.mark.parametrize(
    ("raw", "want"), [(-5, 0), (0, 0), (42.5, 42.5), (100, 100), (250, 100), (float("nan"), 0)]
)
def test_clamp_percent(raw: float, want: float) -> None:
    assert clamp_percent(raw) == want


def test_mean_sm_aggregates_samples_per_pid_after_clamping() -> None:
    samples = [
        ProcessUtilSample(1, 10, 40),
        ProcessUtilSample(1, 20, 250),
        ProcessUtilSample(2, 10, 10),
    ]
    assert mean_sm_by_pid(samples) == {1: 70.0, 2: 10.0}


def test_one_pass_summary_matches_the_two_simple_functions() -> None:
    samples = [
        ProcessUtilSample(pid % 7, ts, sm)
        for pid, ts, sm in zip(
            range(50), range(1000, 1050), [0, 5, 250, -3, float("nan"), 60] * 9, strict=False
        )
    ]
    assert summarize_process_samples(samples) == (
        mean_sm_by_pid(samples),
        last_active_us_by_pid(samples),
    )


def test_last_active_is_the_newest_non_zero_sample() -> None:
    samples = [
        ProcessUtilSample(1, 10, 40),
        ProcessUtilSample(1, 30, 0),
        ProcessUtilSample(1, 20, 5),
    ]
    assert last_active_us_by_pid(samples) == {1: 20}


def test_busy_integral_weights_each_sample_by_its_period() -> None:
    samples = [UtilSample(1_000_000, 100), UtilSample(2_000_000, 50), UtilSample(4_000_000, 100)]
    busy, last = integrate_busy(samples, previous_us=None)
    assert busy == pytest.approx(0.5 + 2.0)  # the first sample sets the baseline
    assert last == 4_000_000
    more, last = integrate_busy([UtilSample(4_000_000, 100), UtilSample(5_000_000, 20)], last)
    assert more == pytest.approx(0.2)  # the repeated sample is not counted twice
    assert last == 5_000_000


def _device(**kw: object) -> DeviceReading:
    base: dict[str, object] = {
        "index": "0",
        "uuid": "GPU-1",
        "model": "NVIDIA A100-SXM4-80GB",
        "memory_used_bytes": 10 * GiB,
        "memory_total_bytes": 80 * GiB,
        "utilization_percent": 50.0,
        "util_samples": (),
        "process_samples": (),
    }
    base.update(kw)
    return DeviceReading(**base)  # type: ignore[arg-type]


def _build(
    devices: list[DeviceReading],
    ids: dict[int, CgroupIdentity],
    state: BuilderState | None = None,
    ratios: VgpuRatios | None = None,
):  # type: ignore[no-untyped-def]
    return build_snapshot(
        NodeReading("550", tuple(devices)),
        ids,
        state or BuilderState(),
        node="n1",
        ratios=ratios or VgpuRatios(),
        taken_at=100.0,
        health=HEALTH,
    )


def test_pods_are_summed_per_container_and_strangers_are_unattributed() -> None:
    dev = _device(
        processes=(
            ProcessReading(1, 2 * GiB),
            ProcessReading(2, 3 * GiB),
            ProcessReading(3, 1 * GiB),
            ProcessReading(4, 4 * GiB),
        ),
        process_samples=(ProcessUtilSample(1, 5_000_000, 30), ProcessUtilSample(2, 5_000_000, 20)),
    )
    snap, _ = _build([dev], {1: POD_A, 2: POD_A, 3: POD_B})
    pods = {p.pod_uid: p for p in snap.pods}
    assert pods[POD_A.pod_uid].memory_used_bytes == 5 * GiB
    assert pods[POD_A.pod_uid].processes == 2
    assert pods[POD_A.pod_uid].sm_utilization_ratio == pytest.approx(0.5)
    assert pods[POD_A.pod_uid].last_active_timestamp_seconds == 5.0
    # Known but silent in this cycle: 0, not absent.
    assert pods[POD_B.pod_uid].sm_utilization_ratio == 0.0
    assert pods[POD_B.pod_uid].last_active_timestamp_seconds is None
    [gpu] = snap.gpus
    assert gpu.unattributed_processes == 1
    assert gpu.unattributed_memory_used_bytes == 4 * GiB
    assert gpu.utilization_ratio == 0.5


def test_unknown_memory_is_never_read_as_zero() -> None:
    dev = _device(
        processes=(ProcessReading(1, None), ProcessReading(2, GiB), ProcessReading(9, None))
    )
    snap, _ = _build([dev], {1: POD_A, 2: POD_A})
    assert snap.pods[0].memory_used_bytes is None
    assert snap.gpus[0].unattributed_memory_used_bytes is None


def test_a_pid_on_two_lists_counts_once() -> None:
    dev = _device(
        processes=(
            ProcessReading(1, GiB, ProcessKind.COMPUTE),
            ProcessReading(1, GiB, ProcessKind.GRAPHICS),
        )
    )
    snap, _ = _build([dev], {1: POD_A})
    assert snap.pods[0].processes == 1
    assert snap.pods[0].memory_used_bytes == GiB


def test_no_process_samples_means_no_pod_utilization_series() -> None:
    dev = _device(mig=MigState.INSTANCE, process_samples=None, processes=(ProcessReading(1, GiB),))
    snap, _ = _build([dev], {1: POD_A})
    assert snap.pods[0].sm_utilization_ratio is None


def test_busy_counter_and_last_active_carry_over_and_vanished_pods_go() -> None:
    first = _device(
        util_samples=(UtilSample(1_000_000, 0), UtilSample(2_000_000, 100)),
        processes=(ProcessReading(1, GiB), ProcessReading(2, GiB)),
        process_samples=(ProcessUtilSample(1, 2_000_000, 90),),
    )
    snap, state = _build([first], {1: POD_A, 2: POD_B})
    assert snap.gpus[0].busy_seconds_total == pytest.approx(1.0)
    second = _device(
        util_samples=(UtilSample(3_000_000, 50),),
        processes=(ProcessReading(1, GiB),),  # pid 2 has exited
    )
    snap, state = _build([second], {1: POD_A}, state)
    assert snap.gpus[0].busy_seconds_total == pytest.approx(1.5)
    assert [p.pod_uid for p in snap.pods] == [POD_A.pod_uid]
    assert snap.pods[0].last_active_timestamp_seconds == 2.0  # remembered across cycles
    snap, state = _build([_device()], {}, state)
    assert snap.pods == ()
    assert state.last_active == {}


def test_vgpu_share_uses_uuid_then_model_then_default() -> None:
    ratios = VgpuRatios(default=2, by_model={"NVIDIA A100-SXM4-80GB": 4}, by_uuid={"GPU-2": 8})
    devs = [
        _device(processes=(ProcessReading(1, GiB),)),
        _device(index="1", uuid="GPU-2", processes=(ProcessReading(2, GiB),)),
        _device(index="2", uuid="GPU-3", model="Tesla T4", processes=(ProcessReading(3, GiB),)),
    ]
    snap, _ = _build(devs, {1: POD_A, 2: POD_A, 3: POD_A}, ratios=ratios)
    assert [p.vgpu_memory_allocated_bytes for p in snap.pods] == [20 * GiB, 10 * GiB, 40 * GiB]
