"""What idle rules read as one sample: last activity, unbroken observation, windowed peaks.

Pure: readings and times are injected; one collection every 5 s unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from exporter.app.collection import CollectionLoop, CollectionTiming, NodeSources, SnapshotStore
from exporter.engine.observation import SLOTS, ObservationSetup, new_ring, record
from exporter.engine.snapshot_builder import BuilderState, SnapshotSetup, build_snapshot
from exporter.engine.vgpu import VgpuRatios
from exporter.model.attribution import CgroupIdentity
from exporter.model.errors import BackendUnavailable
from exporter.model.readings import (
    DeviceReading,
    MigState,
    NodeReading,
    ProcessReading,
    ProcessUtilSample,
    UtilSample,
)
from exporter.model.snapshot import ExporterHealth, GpuSeries, PodGpuSeries, Snapshot
from tests.unit.exporter.core.conftest import FakeClock

T0 = 1_700_000_000.0
GPU = "GPU-a"
MIG = "MIG-a"
POD = CgroupIdentity("aaaaaaaa-0000-4000-8000-000000000001", "c" * 64)
HEALTH = ExporterHealth(
    nvml_up=True, last_success_timestamp_seconds=T0, stage_seconds=(), errors=()
)
# Short windows keep the sequences short: memory 10 min, utilization 5 min.
SETUP = SnapshotSetup(
    "node-a",
    VgpuRatios(),
    observation=ObservationSetup(
        activity_floor=0.05, gap_seconds=15.0, memory_peak_window=600.0, activity_peak_window=300.0
    ),
)


def util(start: float, percents: Sequence[float], period: float = 1.0) -> tuple[UtilSample, ...]:
    """Driver samples, one per ``period`` seconds, the first at ``start``."""
    return tuple(UtilSample(round((start + i * period) * 1e6), p) for i, p in enumerate(percents))


def gpu(
    samples: tuple[UtilSample, ...] | None = (),
    memory: int | None = 1 << 30,
    pids: Sequence[int] = (),
    process_samples: tuple[ProcessUtilSample, ...] | None = (),
) -> DeviceReading:
    return DeviceReading(
        index="0",
        uuid=GPU,
        model="NVIDIA H100",
        memory_used_bytes=memory,
        memory_total_bytes=80 << 30,
        utilization_percent=0.0,
        util_samples=samples,
        processes=tuple(ProcessReading(pid, 1 << 20) for pid in pids),
        process_samples=process_samples,
    )


def mig(memory: int = 2 << 30, pids: Sequence[int] = ()) -> DeviceReading:
    """NVML gives a MIG device memory and processes only: no samples, no utilization."""
    return DeviceReading(
        index="0/1",
        uuid=MIG,
        model="NVIDIA H100 MIG 1g.10gb",
        mig=MigState.INSTANCE,
        parent_uuid=GPU,
        memory_used_bytes=memory,
        memory_total_bytes=10 << 30,
        processes=tuple(ProcessReading(pid, 1 << 20) for pid in pids),
    )


@dataclass
class Node:
    """Feeds readings to the builder as the collection loop does, with an injected clock."""

    now: float = T0
    state: BuilderState = field(default_factory=BuilderState)
    pods: dict[int, CgroupIdentity] = field(default_factory=dict)

    def read(self, *devices: DeviceReading, after: float = 5.0) -> Snapshot:
        self.now += after
        reading = NodeReading("550.54.15", devices)
        snap, self.state = build_snapshot(
            reading, self.pods, self.state, SETUP, taken_at=self.now, health=HEALTH
        )
        return snap

    def run(self, seconds: float, device: DeviceReading) -> Snapshot:
        """Collections every 5 s for ``seconds``, each reading ``device``."""
        snap = self.read(device)
        for _ in range(int(seconds // 5) - 1):
            snap = self.read(device)
        return snap


def one(snap: Snapshot, uuid: str = GPU) -> GpuSeries:
    [series] = [g for g in snap.gpus if g.uuid == uuid]
    return series


def pod(snap: Snapshot, uuid: str = GPU) -> PodGpuSeries:
    [series] = [p for p in snap.pods if p.uuid == uuid]
    return series


# ------------------------------------------------------------------ last active
def test_a_10s_burst_between_two_scrapes_moves_last_active_to_its_last_sample() -> None:
    node = Node()
    assert one(node.read(gpu(util(T0 + 1, [0.0] * 5)))).last_active_timestamp_seconds is None
    # Between two collections (and so between two scrapes): 10 s at 90 %, then idle again.
    burst = util(T0 + 6, [0.0, *([90.0] * 10), 0.0, 0.0])
    snap = node.read(gpu(burst), after=15.0)
    assert one(snap).last_active_timestamp_seconds == T0 + 16
    # Idle collections later leave it where it was.
    snap = node.read(gpu(util(T0 + 20, [0.0, 1.0, 0.0])))
    assert one(snap).last_active_timestamp_seconds == T0 + 16


def test_samples_at_or_under_the_floor_do_not_count_as_activity() -> None:
    node = Node()
    snap = node.read(gpu(util(T0 + 1, [5.0, 4.9, 3.0, 5.0])))  # the floor is 5 %
    assert one(snap).last_active_timestamp_seconds is None
    snap = node.read(gpu(util(T0 + 6, [5.0, 6.0, 5.0])))
    assert one(snap).last_active_timestamp_seconds == T0 + 7


def test_a_process_above_the_floor_counts_where_device_samples_do_not() -> None:
    node = Node()
    quiet = util(T0 + 1, [0.0, 0.0, 0.0])
    low = (ProcessUtilSample(7, round((T0 + 2) * 1e6), 3.0),)
    assert one(node.read(gpu(quiet, process_samples=low))).last_active_timestamp_seconds is None
    busy = (ProcessUtilSample(7, round((T0 + 8) * 1e6), 40.0),)
    snap = node.read(gpu(util(T0 + 6, [0.0, 0.0]), process_samples=busy))
    assert one(snap).last_active_timestamp_seconds == T0 + 8


def test_without_samples_the_reading_above_the_floor_counts_at_the_collection_time() -> None:
    node = Node()
    reading = DeviceReading(index="0", uuid=GPU, model="T4", utilization_percent=30.0)
    snap = node.read(reading)
    assert one(snap).last_active_timestamp_seconds == node.now
    snap = node.read(DeviceReading(index="0", uuid=GPU, model="T4", utilization_percent=4.0))
    assert one(snap).last_active_timestamp_seconds == node.now - 5


def test_pod_last_active_stays_any_non_zero_sm_use_not_the_floor() -> None:
    node = Node(pods={7: POD})
    low = (ProcessUtilSample(7, round((T0 + 2) * 1e6), 3.0),)
    snap = node.read(gpu(util(T0 + 1, [0.0]), pids=[7], process_samples=low))
    assert pod(snap).last_active_timestamp_seconds == T0 + 2
    assert one(snap).last_active_timestamp_seconds is None


# ------------------------------------------------------------------ observed since
def test_observed_since_is_the_first_collection_and_holds_while_reads_continue() -> None:
    node = Node()
    first = node.read(gpu())
    assert one(first).observed_since_timestamp_seconds == T0 + 5
    later = node.run(60, gpu())
    assert one(later).observed_since_timestamp_seconds == T0 + 5


def test_readings_further_apart_than_the_bound_restart_observation() -> None:
    node = Node()
    node.read(gpu())
    node.read(gpu(), after=15.0)  # at the bound: no gap
    snap = node.read(gpu(), after=15.1)  # a stale snapshot was served in between
    assert one(snap).observed_since_timestamp_seconds == node.now


def test_an_exporter_restart_starts_from_nothing() -> None:
    node = Node()
    node.run(900, gpu(util(T0, [50.0])))
    restarted = Node(now=node.now)
    snap = restarted.read(gpu(util(node.now + 1, [0.0])))
    series = one(snap)
    assert series.observed_since_timestamp_seconds == restarted.now
    assert series.last_active_timestamp_seconds is None
    assert series.memory_used_peak_bytes is None
    assert series.utilization_peak_ratio is None


def test_a_device_that_disappears_drops_its_state() -> None:
    node = Node(pods={7: POD})
    node.run(900, gpu(util(T0, [80.0]), pids=[7]))
    assert GPU in node.state.devices
    assert node.state.pod_since
    node.read()  # the GPU fell off the bus; NVML itself is fine
    assert node.state.devices == {}
    assert node.state.pod_since == {}
    back = one(node.read(gpu()))
    assert back.observed_since_timestamp_seconds == node.now
    assert back.last_active_timestamp_seconds is None
    assert back.memory_used_peak_bytes is None


def test_a_pod_newly_placed_on_a_device_gets_a_fresh_observed_since() -> None:
    node = Node(pods={7: POD, 8: POD})
    node.run(60, gpu())
    snap = node.read(gpu(pids=[7]))
    assert pod(snap).observed_since_timestamp_seconds == node.now
    placed = node.now
    snap = node.run(30, gpu(pids=[7, 8]))
    assert pod(snap).observed_since_timestamp_seconds == placed
    node.read(gpu())  # its processes left: it is no longer seen holding the GPU
    snap = node.read(gpu(pids=[8]))
    assert pod(snap).observed_since_timestamp_seconds == node.now


def test_a_gap_on_the_device_restarts_its_pods_observation() -> None:
    node = Node(pods={7: POD})
    node.run(60, gpu(pids=[7]))
    snap = node.read(gpu(pids=[7]), after=60.0)
    assert pod(snap).observed_since_timestamp_seconds == node.now


# ------------------------------------------------------------------ peaks
def test_the_memory_peak_is_absent_until_the_window_was_observed_then_trails_it() -> None:
    node = Node()
    node.read(gpu(memory=8 << 30))
    snap = node.run(595, gpu(memory=1 << 30))
    assert one(snap).memory_used_peak_bytes is None  # 595 s of a 600 s window observed
    snap = node.read(gpu(memory=1 << 30))
    assert one(snap).memory_used_peak_bytes == 8 << 30
    snap = node.run(60, gpu(memory=1 << 30))  # the 8 GiB reading leaves the window
    assert one(snap).memory_used_peak_bytes == 1 << 30


def test_the_utilization_peak_comes_from_samples_not_the_collection_reading() -> None:
    node = Node()
    node.read(gpu(util(T0 + 1, [0.0])))
    node.read(gpu(util(T0 + 6, [0.0, 100.0, 0.0])))  # a spike between two collections
    snap = node.run(295, gpu(util(node.now + 1, [10.0])))
    assert one(snap).utilization_peak_ratio == 1.0
    snap = node.run(30, gpu(util(node.now + 1, [10.0])))
    assert one(snap).utilization_peak_ratio == 0.1


def test_an_nvml_outage_resets_observation_and_hides_the_peaks() -> None:
    clock = FakeClock(T0)
    backend = Scripted(gpu(util(T0, [90.0]), memory=8 << 30))
    store = SnapshotStore()
    loop = CollectionLoop(
        NodeSources(backend, NoCgroups()),
        store,
        SETUP,
        CollectionTiming(interval=5.0, timeout=2.0, backoff_max=5.0, clock=clock),
    )
    for _ in range(130):
        clock.advance(5)
        snap = loop.run_cycle()
    assert one(snap).memory_used_peak_bytes == 8 << 30
    backend.down = True
    clock.advance(5)
    assert loop.run_cycle().gpus == ()
    backend.down, backend.device = False, gpu(util(clock.now + 1, [0.0]))
    clock.advance(5)
    series = one(loop.run_cycle())
    assert series.observed_since_timestamp_seconds == clock.now
    assert series.memory_used_peak_bytes is None
    assert series.utilization_peak_ratio is None
    assert series.last_active_timestamp_seconds is None  # nothing seen since NVML came back


def test_a_series_missing_from_a_reading_restarts_its_own_peak() -> None:
    node = Node()
    for _ in range(120):  # 10 minutes, a fresh 20 % sample each collection
        node.read(gpu(util(node.now + 1, [20.0])))
    snap = node.read(gpu(util(node.now + 1, [3.0]), memory=None))  # no memory this time
    assert one(snap).memory_used_peak_bytes is None
    assert one(snap).utilization_peak_ratio == 0.2  # its own series went on without a gap
    snap = node.run(300, gpu(util(node.now + 1, [3.0])))
    assert one(snap).utilization_peak_ratio == 0.03
    assert one(snap).memory_used_peak_bytes is None
    assert one(snap).observed_since_timestamp_seconds == T0 + 5


def test_mig_devices_without_samples_get_memory_facts_only() -> None:
    node = Node(pods={7: POD})
    first = node.read(mig(pids=[7]))
    snap = node.run(600, mig(pids=[7]))
    series = one(snap, MIG)
    assert series.observed_since_timestamp_seconds == first.taken_at
    assert series.memory_used_peak_bytes == 2 << 30
    assert series.last_active_timestamp_seconds is None
    assert series.utilization_peak_ratio is None
    assert pod(snap, MIG).observed_since_timestamp_seconds == first.taken_at


def test_a_ring_keeps_constant_memory_and_tolerates_late_and_early_points() -> None:
    ring = new_ring(0.0, 10.0)
    for second in range(0, 10_000, 5):
        ring = record(ring, [(float(second), float(second % 7))], float(second), 10.0)
    assert len(ring.closed) == SLOTS
    assert ring.peak(10_000.0, 600.0) == 6.0
    # A sample from two slots back still counts; one older than the ring does not.
    ring = record(ring, [(9_975.0, 50.0), (1_000.0, 99.0)], 9_995.0, 10.0)
    assert ring.peak(10_000.0, 600.0) == 50.0
    # A clock stepping back starts the ring again: its slots no longer say when.
    ring = record(ring, [(5.0, 7.0)], 5.0, 10.0)
    assert (ring.since, ring.current, ring.closed_max) == (5.0, 7.0, float("-inf"))
    assert ring.peak(605.0, 600.0) == 7.0


# ------------------------------------------------------------------ helpers
class Scripted:
    """A backend reading one device again and again; ``down`` makes it fail."""

    name = "scripted"

    def __init__(self, device: DeviceReading) -> None:
        self.device = device
        self.down = False

    def open(self) -> None:
        if self.down:
            raise BackendUnavailable("no driver", op="init", kind="driver_not_loaded")

    def read(self) -> NodeReading:
        if self.down:
            raise BackendUnavailable("lost", op="memory_info", kind="gpu_is_lost")
        return NodeReading("550.54.15", (self.device,))

    def close(self) -> None:
        pass


class NoCgroups:
    def read_cgroup(self, pid: int) -> str | None:
        return None
