"""The no-process and per-pod facts the share rules read as one sample.

Same node as test_observation (collections every 5 s, utilization window 5 min, which is
also how long a pod's facts outlive its last process).
"""

from __future__ import annotations

from exporter.app.metrics import RenderedSnapshot
from exporter.model.attribution import CgroupIdentity
from exporter.model.readings import ProcessUtilSample
from exporter.model.snapshot import PodDeviceSeries, Snapshot
from tests.unit.exporter.core.test_observation import GPU, MIG, POD, T0, Node, gpu, mig, one, util

OTHER = CgroupIdentity("bbbbbbbb-0000-4000-8000-000000000002", "d" * 64)
RESTARTED = CgroupIdentity(POD.pod_uid, "e" * 64)  # the same pod, its container restarted


def facts(snap: Snapshot, pod_uid: str | None = POD.pod_uid) -> PodDeviceSeries | None:
    found = [p for p in snap.pod_devices if p.pod_uid == pod_uid]
    return found[0] if found else None


def fact(snap: Snapshot, pod_uid: str | None = POD.pod_uid) -> PodDeviceSeries:
    found = facts(snap, pod_uid)
    assert found is not None
    return found


def sm(pid: int, at: float, percent: float) -> tuple[ProcessUtilSample, ...]:
    return (ProcessUtilSample(pid, round(at * 1e6), percent),)


# ------------------------------------------------------------------ device: last process
def test_last_process_is_the_newest_collection_with_any_process_pod_or_host() -> None:
    node = Node(pods={7: POD})
    assert one(node.read(gpu())).last_process_timestamp_seconds is None
    node.read(gpu(pids=[7]))
    seen = node.now
    snap = node.run(60, gpu())
    assert one(snap).last_process_timestamp_seconds == seen
    snap = node.read(gpu(pids=[99]))  # a host process (no pod) counts too
    assert one(snap).last_process_timestamp_seconds == node.now


def test_a_mig_slice_holding_memory_counts_as_in_use_without_a_listed_process() -> None:
    node = Node()
    snap = node.read(mig(memory=128 << 20))  # no process listed, 128 MiB held
    assert one(snap, MIG).last_process_timestamp_seconds == node.now
    held = node.now
    snap = node.read(mig(memory=(64 << 20) - 1))  # under the 64 MiB floor
    assert one(snap, MIG).last_process_timestamp_seconds == held


def test_an_exporter_restart_forgets_the_last_process() -> None:
    node = Node(pods={7: POD})
    node.run(60, gpu(pids=[7]))
    restarted = Node(now=node.now, pods={7: POD})
    snap = restarted.read(gpu())
    assert one(snap).last_process_timestamp_seconds is None
    assert one(snap).observed_since_timestamp_seconds == restarted.now


def test_a_gap_keeps_the_last_process_and_starts_the_observation_again() -> None:
    node = Node(pods={7: POD})
    node.read(gpu(pids=[7]))
    seen = node.now
    snap = node.read(gpu(), after=60.0)  # a hung collection: the device is read again
    assert one(snap).observed_since_timestamp_seconds == node.now
    assert one(snap).last_process_timestamp_seconds == seen  # older than observed-since


# ------------------------------------------------------------------ pod on device
def test_pod_facts_outlive_its_processes_for_the_window_then_go() -> None:
    node = Node(pods={7: POD})
    node.run(60, gpu(pids=[7]))
    last = node.now
    snap = node.run(300, gpu())  # 300 s: exactly the window later
    assert facts(snap) is not None
    assert fact(snap).last_process_timestamp_seconds == last
    snap = node.read(gpu())
    assert facts(snap) is None
    assert node.state.pod_devices == {}


def test_idle_since_follows_any_sm_use_of_any_of_the_pods_containers() -> None:
    node = Node(pods={7: POD, 8: RESTARTED})
    snap = node.read(gpu(util(T0, [60.0]), pids=[7], process_samples=sm(7, T0 + 3, 0.0)))
    start = node.now
    assert fact(snap).idle_since_timestamp_seconds == start
    snap = node.read(gpu(util(T0, [60.0]), pids=[7], process_samples=sm(7, T0 + 8, 2.0)))
    assert fact(snap).idle_since_timestamp_seconds == T0 + 8
    # The container restarts: the old one's series goes, the pod's activity stays known.
    node.read(gpu(util(T0, [60.0])))
    snap = node.read(gpu(util(T0, [60.0]), pids=[8], process_samples=sm(8, node.now, 0.0)))
    assert fact(snap).idle_since_timestamp_seconds == T0 + 8
    assert [p.container_id for p in snap.pods] == [RESTARTED.container_id]


def test_pods_on_one_device_are_kept_apart() -> None:
    node = Node(pods={7: POD, 9: OTHER})
    node.read(gpu(util(T0, [40.0]), pids=[7, 9]))
    samples = (*sm(7, T0 + 8, 0.0), *sm(9, T0 + 8, 40.0))
    snap = node.read(gpu(util(T0, [40.0]), pids=[7, 9], process_samples=samples))
    assert fact(snap).idle_since_timestamp_seconds == T0 + 5
    assert fact(snap, OTHER.pod_uid).idle_since_timestamp_seconds == T0 + 8


def test_a_gap_on_the_device_drops_the_pods_facts() -> None:
    node = Node(pods={7: POD})
    node.run(60, gpu(pids=[7], process_samples=sm(7, T0 + 3, 50.0)))
    node.read(gpu())
    snap = node.read(gpu(), after=60.0)  # no reading for a minute: what happened is unknown
    assert facts(snap) is None
    snap = node.read(gpu(pids=[7]))
    assert fact(snap).idle_since_timestamp_seconds == node.now - 5


def test_no_idle_since_where_nvml_gives_no_process_samples() -> None:
    node = Node(pods={7: POD})
    snap = node.read(mig(pids=[7]))
    series = facts(snap)
    assert series is not None
    assert series.last_process_timestamp_seconds == node.now
    assert series.idle_since_timestamp_seconds is None


def test_the_facts_are_rendered_per_pod_and_device_without_container_labels() -> None:
    node = Node(pods={7: POD})
    snap = node.read(gpu(util(T0, [40.0]), pids=[7], process_samples=sm(7, T0 + 3, 0.0)))
    body, _ = RenderedSnapshot(snap).body(None)
    text = body.decode()
    labels = f'gpu="0",node="node-a",pod_uid="{POD.pod_uid}",uuid="{GPU}"'
    assert f"guardian_pod_device_last_process_timestamp_seconds{{{labels}}} 1.700000005e+09" in text
    assert f"guardian_pod_device_idle_since_timestamp_seconds{{{labels}}} 1.700000005e+09" in text
    device = f'gpu="0",node="node-a",uuid="{GPU}"'
    assert f"guardian_gpu_last_process_timestamp_seconds{{{device}}} 1.700000005e+09" in text
