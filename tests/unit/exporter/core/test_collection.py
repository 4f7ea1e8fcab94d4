"""The collection loop: faults never crash it, and every scrape sees one whole snapshot."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.adapters.procfs import ProcReader
from exporter.app.collection import (
    REFRESH_CYCLES,
    CollectionLoop,
    CollectionTiming,
    NodeSources,
    SnapshotStore,
)
from exporter.engine.snapshot_builder import SnapshotSetup
from exporter.engine.vgpu import VgpuRatios
from exporter.model.errors import BackendUnavailable
from exporter.model.readings import DeviceReading, NodeReading, ProcessReading
from testbed.node.cgroups import write_proc_entry
from testbed.node.scenario import parse_scenario
from testbed.node.scenario_backend import ScenarioCgroups, SimulatedBackend
from tests.unit.exporter.core.conftest import FakeClock

GPU = "GPU-00000000-0000-4000-8000-000000000000"
POD = "aaaaaaaa-0000-4000-8000-000000000001"
SCENARIO = f"""
gpus: [{{uuid: {GPU}, model: Tesla T4, memory_total: 16GiB}}]
processes:
  - {{pid: 10, gpu: {GPU}, memory: 1GiB, sm_percent: 50, pod_uid: {POD}, container_id: {"c" * 64}}}
  - {{pid: 11, gpu: {GPU}, memory: 2GiB, sm_percent: 10, pod_uid: {POD},
     container_id: {"d" * 64}, end: 12}}
"""


def samples(store: SnapshotStore) -> dict[str, list[tuple[dict[str, str], float]]]:
    assert store.current is not None
    body, _ = store.current.body(None)
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def make(text: str, clock: FakeClock, timeout: float = 2.0) -> tuple[CollectionLoop, SnapshotStore]:
    scenario = parse_scenario(text)
    store = SnapshotStore()
    collector = CollectionLoop(
        NodeSources(SimulatedBackend(scenario, clock), ScenarioCgroups(scenario)),
        store,
        SnapshotSetup("node-a", VgpuRatios()),
        CollectionTiming(interval=5.0, timeout=timeout, backoff_max=20.0, clock=clock),
    )
    return collector, store


def test_a_cycle_publishes_gpu_and_pod_series(clock: FakeClock) -> None:
    collector, store = make(SCENARIO, clock)
    clock.advance(5)
    collector.run_cycle()
    got = samples(store)
    assert got["guardian_exporter_nvml_up"] == [({"node": "node-a"}, 1.0)]
    assert got["guardian_gpu_info"][0][0] == {
        "node": "node-a",
        "gpu": "0",
        "uuid": GPU,
        "model": "Tesla T4",
        "driver_version": "550.54.15",
        "mig": "disabled",
    }
    pods = [lbl for lbl, _ in got["guardian_pod_gpu_memory_used_bytes"]]
    assert {lbl["container_id"] for lbl in pods} == {"c" * 64, "d" * 64}
    # Without Kubernetes no container has a known name.
    assert {lbl["container"] for lbl in pods} == {""}
    assert store.ready.is_set()


def test_a_vanished_process_disappears_from_the_next_scrape(clock: FakeClock) -> None:
    collector, store = make(SCENARIO, clock)
    clock.advance(5)
    collector.run_cycle()
    clock.advance(10)
    collector.run_cycle()
    got = samples(store)
    for name in (
        "guardian_pod_gpu_memory_used_bytes",
        "guardian_pod_gpu_processes",
        "guardian_pod_gpu_sm_utilization_ratio",
    ):
        assert [lbl["container_id"] for lbl, _ in got[name]] == ["c" * 64], name


def test_nvml_down_at_start_serves_up_0_and_retries_with_backoff(clock: FakeClock) -> None:
    collector, store = make(SCENARIO + "faults: [{kind: nvml_init_failure, end: 30}]\n", clock)
    attempts: list[float] = []
    snap = collector.run_cycle()
    attempts.append(clock.now)
    assert not snap.health.nvml_up
    assert snap.gpus == ()
    got = samples(store)
    assert got["guardian_exporter_nvml_up"] == [({"node": "node-a"}, 0.0)]
    assert ({"node": "node-a", "op": "init", "kind": "driver_not_loaded"}, 1.0) in got[
        "guardian_exporter_errors_total"
    ]
    assert "guardian_gpu_info" not in got
    counts = []
    for _ in range(12):
        clock.advance(5)
        before = {(e.op, e.kind): e.count for e in collector.run_cycle().health.errors}
        counts.append(before.get(("init", "driver_not_loaded"), 0))
    # Backoff 5, 10, 20, 20 s: attempts at 0, 5, 15, 35 -> the fourth one (t=35) succeeds.
    assert counts[:6] == [2, 2, 3, 3, 3, 3]
    assert samples(store)["guardian_exporter_nvml_up"] == [({"node": "node-a"}, 1.0)]


def test_gpu_lost_marks_down_then_reinitialises(clock: FakeClock) -> None:
    collector, _store = make(SCENARIO + "faults: [{kind: gpu_lost, start: 8, end: 14}]\n", clock)
    clock.advance(5)
    assert collector.run_cycle().health.nvml_up
    clock.advance(5)
    snap = collector.run_cycle()
    assert not snap.health.nvml_up
    assert snap.gpus == ()
    assert snap.pods == ()
    clock.advance(5)  # t=15: past the fault and the 5 s backoff
    snap = collector.run_cycle()
    assert snap.health.nvml_up
    assert snap.gpus
    assert {(e.op, e.kind) for e in snap.health.errors} == {("read", "gpu_is_lost")}


def test_a_hung_call_serves_the_last_snapshot_marked_stale(clock: FakeClock) -> None:
    text = SCENARIO + "faults: [{kind: hung_call, start: 8, end: 9, hang_seconds: 0.5}]\n"
    collector, store = make(text, clock, timeout=0.1)
    clock.advance(5)
    good = collector.run_cycle()
    clock.advance(3)
    stale = collector.run_cycle()
    assert stale.health.stale
    assert stale.gpus == good.gpus
    got = samples(store)
    assert got["guardian_exporter_snapshot_stale"] == [({"node": "node-a"}, 1.0)]
    assert "guardian_gpu_memory_used_bytes" in got
    # While the call is still stuck, the next cycle fails fast instead of piling up threads.
    clock.advance(5)
    assert collector.run_cycle().health.stale
    threading.Event().wait(0.6)
    clock.advance(5)
    fresh = collector.run_cycle()
    assert not fresh.health.stale


class _FlakyBackend:
    name = "flaky"

    def __init__(self) -> None:
        self.reads = 0

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self) -> NodeReading:
        self.reads += 1
        if self.reads == 2:
            raise RuntimeError("bug in a backend")
        return NodeReading("1", (DeviceReading("0", GPU, "T4", processes=(ProcessReading(5, 1),)),))


def test_the_loop_survives_an_unexpected_exception_and_stops_cleanly() -> None:
    store = SnapshotStore()
    backend = _FlakyBackend()
    collector = CollectionLoop(
        NodeSources(backend, ScenarioCgroups(parse_scenario(SCENARIO))), store,
        SnapshotSetup("n", VgpuRatios()),
        CollectionTiming(interval=0.01, timeout=1.0, backoff_max=1.0),
    )  # fmt: skip
    collector.start()
    try:
        for _ in range(500):
            if backend.reads >= 4:
                break
            threading.Event().wait(0.01)
        assert backend.reads >= 4
        assert collector.alive
    finally:
        collector.stop()
    assert not collector.alive


def test_backend_unavailable_from_read_counts_the_error_kind(clock: FakeClock) -> None:
    class Lost(_FlakyBackend):
        def read(self) -> NodeReading:
            raise BackendUnavailable("lost", op="memory_info", kind="gpu_is_lost")

    store = SnapshotStore()
    collector = CollectionLoop(
        NodeSources(Lost(), ScenarioCgroups(parse_scenario(SCENARIO))), store,
        SnapshotSetup("n", VgpuRatios()),
        CollectionTiming(interval=5, timeout=1.0, backoff_max=60, clock=clock),
    )  # fmt: skip
    snap = collector.run_cycle()
    assert [(e.op, e.kind, e.count) for e in snap.health.errors] == [
        ("memory_info", "gpu_is_lost", 1)
    ]


@pytest.mark.parametrize("accept", [None, "application/openmetrics-text; version=1.0.0"])
def test_rendering_is_shared_per_snapshot_and_format(clock: FakeClock, accept: str | None) -> None:
    collector, store = make(SCENARIO, clock)
    clock.advance(5)
    collector.run_cycle()
    assert store.current is not None
    first, ctype = store.current.body(accept)
    again, _ = store.current.body(accept)
    assert first is again
    assert ("openmetrics" in ctype) == (accept is not None)


class _Fixed(_FlakyBackend):
    def __init__(self) -> None:
        super().__init__()
        self.pids: tuple[int, ...] = (4242,)

    def read(self) -> NodeReading:
        procs = tuple(ProcessReading(pid, 1) for pid in self.pids)
        return NodeReading("1", (DeviceReading("0", GPU, "T4", processes=procs),))


def test_attribution_is_cached_per_pid_and_refreshed(tmp_path: Path, clock: FakeClock) -> None:
    other = "bbbbbbbb-0000-4000-8000-000000000002"
    write_proc_entry(tmp_path, 4242, f"0::/kubepods/besteffort/pod{POD}/{'c' * 64}\n")
    backend = _Fixed()
    collector = CollectionLoop(
        NodeSources(backend, ProcReader(tmp_path)), SnapshotStore(),
        SnapshotSetup("n", VgpuRatios()),
        CollectionTiming(interval=5, timeout=1.0, backoff_max=60, clock=clock),
    )  # fmt: skip

    def pods() -> list[str]:
        return [p.pod_uid for p in collector.run_cycle().pods]

    assert pods() == [POD]
    # The same PID in another pod: the old process exited and the PID was reused.
    write_proc_entry(tmp_path, 4242, f"0::/kubepods/besteffort/pod{other}/{'d' * 64}\n")
    seen = [pods() for _ in range(REFRESH_CYCLES)]
    assert seen[-1] == [other]  # re-read within REFRESH_CYCLES cycles at the latest
    # A PID that left the GPUs is forgotten and read afresh when it comes back.
    backend.pids = ()
    assert pods() == []
    write_proc_entry(tmp_path, 4242, f"0::/kubepods/besteffort/pod{POD}/{'c' * 64}\n")
    backend.pids = (4242,)
    assert pods() == [POD]
    # A process that exited before it could be read counts as unattributed, and is retried.
    (tmp_path / "4242" / "cgroup").unlink()
    backend.pids = (4242,)
    for _ in range(REFRESH_CYCLES):
        snap = collector.run_cycle()
        if snap.gpus[0].unattributed_processes:
            break
    else:
        pytest.fail("the vanished cgroup file was never read again")
    write_proc_entry(tmp_path, 4242, f"0::/kubepods/besteffort/pod{other}/{'d' * 64}\n")
    assert pods() == [other]
