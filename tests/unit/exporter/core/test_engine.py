"""Pure engine logic: utilization arithmetic and snapshot building."""

from __future__ import annotations

import pytest

from exporter.engine.snapshot_builder import BuilderState, SnapshotSetup, build_snapshot
from exporter.engine.utilization import (
    clamp_percent,
    integrate_busy,
    sm_percent_by_pid,
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


def test_summary_clamps_sums_and_finds_the_sampling_period() -> None:
    samples = [
        ProcessUtilSample(1, 1_000_000, 40),
        ProcessUtilSample(1, 2_000_000, 250),
        ProcessUtilSample(2, 2_000_000, float("nan")),
        ProcessUtilSample(2, 4_000_000, -3),
        ProcessUtilSample(3, 4_000_000, 10),
    ]
    summary = summarize_process_samples(samples)
    assert summary.sums == {1: 140.0, 2: 0.0, 3: 10.0}
    assert summary.counts == {1: 2, 2: 2, 3: 1}
    assert summary.last_active_us == {1: 2_000_000, 3: 4_000_000}  # pid 2 was never active
    assert (summary.oldest_us, summary.newest_us, summary.min_gap_us) == (
        1_000_000,
        4_000_000,
        1_000_000,
    )


def test_until_the_period_is_known_the_mean_of_the_samples_is_used() -> None:
    summary = summarize_process_samples([ProcessUtilSample(1, 5, 30), ProcessUtilSample(1, 5, 50)])
    assert sm_percent_by_pid(summary, None, None) == {1: 40.0}


def test_periods_without_a_sample_count_as_idle() -> None:
    # A process busy in 1 of 5 one-second periods is 18 % busy, not 90 %.
    summary = summarize_process_samples([ProcessUtilSample(1, 3_000_000, 90)])
    assert sm_percent_by_pid(summary, 1_000_000, 5_000_000) == {1: pytest.approx(18.0)}
    # The first read (no previous window) spans the samples it got.
    summary = summarize_process_samples(
        [ProcessUtilSample(1, t * 1_000_000, 50) for t in (1, 2, 4)]
    )
    assert sm_percent_by_pid(summary, 1_000_000, None) == {1: pytest.approx(37.5)}


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
        SnapshotSetup("n1", ratios or VgpuRatios()),
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


def test_pod_utilization_is_averaged_over_the_time_since_the_last_read() -> None:
    ids = {1: POD_A, 2: POD_B}
    procs = (ProcessReading(1, GiB), ProcessReading(2, GiB))
    _, state = build_snapshot(
        NodeReading("550", (_device(processes=procs),)), ids, BuilderState(),
        SnapshotSetup("n1", VgpuRatios()), taken_at=95.0, health=HEALTH,
    )  # fmt: skip
    busy_once = (ProcessUtilSample(1, 98_000_000, 90),)
    steady = tuple(ProcessUtilSample(2, t * 1_000_000, 10) for t in range(96, 101))
    snap, state = _build([_device(processes=procs, process_samples=busy_once + steady)], ids, state)
    by_pod = {p.pod_uid: p.sm_utilization_ratio for p in snap.pods}
    assert by_pod[POD_A.pod_uid] == pytest.approx(0.18)  # 90 % for 1 s of the last 5 s
    assert by_pod[POD_B.pod_uid] == pytest.approx(0.10)
    assert state.process_period_us == {"GPU-1": 1_000_000}


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
