"""The idle facts a feed derives from raw exporter series follow the exporter's rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from guardian.adapters.openmetrics import Sample
from testbed.feeds import FactSetup, Restart, holder_processes, idle_facts, latest, with_idle_facts

T0 = 1_700_000_000.0
MIB = 1024 * 1024
GPU = {"cluster": "c1", "node": "n1", "gpu": "0", "uuid": "GPU-0"}
MIG = {"cluster": "c1", "node": "n1", "gpu": "1", "uuid": "MIG-1"}
POD = {**GPU, "namespace": "ml", "pod": "train-0", "pod_uid": "u0", "gpu_group": "a"}
PROC = {**POD, "container": "main", "container_id": "c0"}


def at(minute: float) -> float:
    return T0 + minute * 60


def history(
    minutes: Iterable[int],
    util: Callable[[int], float] = lambda _m: 0.01,
    processes: Callable[[int], int] = lambda _m: 1,
) -> list[Sample]:
    out: list[Sample] = []
    for m in minutes:
        out.append(Sample("guardian_gpu_utilization_ratio", GPU, at(m), util(m)))
        out.append(Sample("guardian_gpu_memory_used_bytes", GPU, at(m), 1e9 + m))
        out.append(Sample("guardian_gpu_unattributed_processes", GPU, at(m), 0.0))
        if processes(m):
            out.append(Sample("guardian_pod_gpu_processes", PROC, at(m), float(processes(m))))
    return out


def fact(facts: list[Sample], name: str, minute: float) -> Sample | None:
    found = [s for s in latest(facts, at(minute)) if s.name == name]
    assert len(found) <= 1, found
    return found[0] if found else None


def value(facts: list[Sample], name: str, minute: float) -> float | None:
    sample = fact(facts, name, minute)
    return None if sample is None else sample.value


OBSERVED = "guardian_gpu_observed_since_timestamp_seconds"
ACTIVE = "guardian_gpu_last_active_timestamp_seconds"
PEAK = "guardian_gpu_utilization_peak_ratio"
MEMORY_PEAK = "guardian_gpu_memory_used_peak_bytes"
PROCESS = "guardian_gpu_last_process_timestamp_seconds"
POD_PROCESS = "guardian_pod_device_last_process_timestamp_seconds"
POD_IDLE = "guardian_pod_device_idle_since_timestamp_seconds"


def test_an_idle_device_is_observed_from_its_first_reading_and_peaks_once_observed() -> None:
    facts = idle_facts(history(range(5, 70)))

    assert value(facts, OBSERVED, 5) == value(facts, OBSERVED, 69) == at(5)
    assert value(facts, ACTIVE, 69) is None
    assert value(facts, PROCESS, 69) == at(69)
    assert value(facts, PEAK, 34) is None  # 29 minutes observed: no peak yet
    peak = fact(facts, PEAK, 35)
    assert peak is not None
    assert (peak.value, peak.labels) == (0.01, {**GPU, "window": "30m"})
    assert value(facts, MEMORY_PEAK, 64) is None
    assert value(facts, MEMORY_PEAK, 65) == 1e9 + 65
    assert fact(facts, OBSERVED, 10) == Sample(OBSERVED, GPU, at(10), at(5))


def test_a_burst_is_the_last_activity_and_the_peak_for_the_window_after_it() -> None:
    facts = idle_facts(history(range(60), util=lambda m: 0.8 if m == 10 else 0.01))

    assert value(facts, ACTIVE, 9) is None
    assert value(facts, ACTIVE, 10) == value(facts, ACTIVE, 59) == at(10)
    assert value(facts, PEAK, 30) == 0.8
    assert value(facts, PEAK, 39) == 0.8
    assert value(facts, PEAK, 40) == 0.01  # the window is (t - 30m, t]
    # at the floor is not above it
    assert value(idle_facts(history(range(5), util=lambda _m: 0.05)), ACTIVE, 4) is None


def test_a_process_sample_above_the_floor_is_activity() -> None:
    sm = [Sample("guardian_pod_gpu_sm_utilization_ratio", PROC, at(3), 0.3)]
    facts = idle_facts(history(range(5), util=lambda _m: 0.0) + sm)

    assert value(facts, ACTIVE, 4) == at(3)
    assert value(facts, POD_IDLE, 4) == at(3)


def test_a_restart_passed_in_starts_observation_again_and_forgets_activity() -> None:
    raw = history(range(60), util=lambda m: 0.8 if m == 10 else 0.0)
    facts = idle_facts(raw, restarts=[Restart(at(20.5), {"node": "n1"})])

    assert value(facts, OBSERVED, 20) == at(0)
    assert value(facts, ACTIVE, 20) == at(10)
    assert value(facts, OBSERVED, 21) == value(facts, OBSERVED, 59) == at(21)
    assert value(facts, ACTIVE, 21) is None
    assert value(facts, PEAK, 50) is None
    assert value(facts, PEAK, 51) == 0.0
    assert value(facts, PROCESS, 21) == at(21)
    elsewhere = idle_facts(raw, restarts=[Restart(at(20.5), {"node": "n2"})])
    assert value(elsewhere, OBSERVED, 59) == at(0)


def test_an_outage_starts_observation_again_but_keeps_the_last_activity() -> None:
    minutes = [m for m in range(80) if not 30 <= m < 40]
    facts = idle_facts(history(minutes, util=lambda m: 0.8 if m == 10 else 0.0))

    assert value(facts, OBSERVED, 29) == at(0)
    assert value(facts, OBSERVED, 40) == at(40)
    assert value(facts, ACTIVE, 40) == at(10)
    assert value(facts, PEAK, 69) is None
    assert value(facts, PEAK, 70) == 0.0
    # a fixed gap bound: 11 minutes between readings is no gap
    assert value(idle_facts(history(minutes), setup=FactSetup(gap=660.0)), OBSERVED, 79) == at(0)


def test_no_process_leaves_the_last_process_absent() -> None:
    facts = idle_facts(history(range(40), processes=lambda m: 1 if m < 5 else 0))

    assert value(facts, PROCESS, 39) == at(4)
    assert value(idle_facts(history(range(40), processes=lambda _m: 0)), PROCESS, 39) is None
    unattributed = [Sample("guardian_gpu_unattributed_processes", GPU, at(7), 2.0)]
    facts = idle_facts(history(range(40), processes=lambda _m: 0) + unattributed)
    assert value(facts, PROCESS, 39) == at(7)


def mig(minutes: Iterable[int], memory: Callable[[int], float]) -> list[Sample]:
    return [Sample("guardian_gpu_memory_used_bytes", MIG, at(m), memory(m)) for m in minutes] + [
        Sample("guardian_gpu_unattributed_processes", MIG, at(m), 0.0) for m in minutes
    ]


def test_mig_memory_of_64_mib_or_more_counts_as_a_process() -> None:
    facts = idle_facts(mig(range(70), lambda m: 64 * MIB if m == 12 else 63 * MIB))

    assert value(facts, PROCESS, 11) is None
    assert value(facts, PROCESS, 69) == at(12)
    assert value(facts, OBSERVED, 69) == at(0)
    assert value(facts, MEMORY_PEAK, 69) == 64 * MIB
    assert value(facts, ACTIVE, 69) is None  # no utilization, no activity, no peak on MIG
    assert value(facts, PEAK, 69) is None
    below = idle_facts(mig(range(70), lambda _m: 64 * MIB - 1))
    assert value(below, PROCESS, 69) is None
    util = [Sample("guardian_gpu_utilization_ratio", MIG, at(m), 0.9) for m in range(70)]
    assert value(idle_facts(mig(range(70), lambda _m: 0.0) + util), ACTIVE, 69) is None


def test_pod_facts_are_kept_30m_after_the_last_process_then_gone() -> None:
    raw = history(range(60), processes=lambda m: 1 if m <= 10 else 0)
    raw += [Sample("guardian_pod_gpu_sm_utilization_ratio", PROC, at(m), 0.0) for m in range(60)]
    facts = idle_facts(raw)

    last = fact(facts, POD_PROCESS, 40)
    assert last is not None
    assert (last.value, last.labels) == (at(10), POD)  # no container, no container_id
    assert value(facts, POD_IDLE, 40) == at(0)  # no SM use: since observation began
    assert fact(facts, POD_PROCESS, 41) is None
    assert fact(facts, POD_IDLE, 41) is None
    assert value(facts, PROCESS, 59) == at(10)  # the device's stays


def test_pod_idle_since_is_its_newest_sm_use_or_the_last_active_it_reports() -> None:
    raw = history(range(30))
    raw += [
        Sample("guardian_pod_gpu_sm_utilization_ratio", PROC, at(m), 0.02 if m == 7 else 0.0)
        for m in range(30)
    ]
    raw += [Sample("guardian_pod_gpu_last_active_timestamp_seconds", PROC, at(20), at(19.5))]
    facts = idle_facts(raw)

    assert value(facts, POD_IDLE, 6) == at(0)
    assert value(facts, POD_IDLE, 7) == at(7)
    assert value(facts, POD_IDLE, 20) == at(19.5)
    assert value(facts, ACTIVE, 29) is None  # 0.02 is SM use, but under the floor


def test_no_idle_since_without_per_process_samples() -> None:
    facts = idle_facts(history(range(5)))

    assert value(facts, POD_PROCESS, 4) == at(4)
    assert fact(facts, POD_IDLE, 4) is None


def test_a_gap_drops_the_pod_entries_and_keeps_the_last_process() -> None:
    minutes = [m for m in range(30) if not 10 <= m < 20]
    facts = idle_facts(history(minutes, processes=lambda m: 1 if m < 5 else 0))

    assert value(facts, POD_PROCESS, 9) == at(4)
    assert fact(facts, POD_PROCESS, 20) is None
    # As the exporter (test_process_facts): older than the new observed-since, so a rule
    # reads it as it would read its absence.
    assert value(facts, PROCESS, 20) == at(4)
    assert value(facts, OBSERVED, 20) == at(20)


def test_devices_are_keyed_by_cluster_node_and_uuid_as_present() -> None:
    plain = {k: v for k, v in GPU.items() if k != "cluster"}
    raw = history(range(3))
    raw += [Sample("guardian_gpu_utilization_ratio", plain, at(m), 0.0) for m in range(1, 3)]
    raw += [Sample("guardian_gpu_observed_since_timestamp_seconds", GPU, at(2), 1.0)]
    facts = [s for s in idle_facts(raw) if s.name == OBSERVED and s.timestamp == at(2)]

    assert sorted(((dict(s.labels), s.value) for s in facts), key=str) == sorted(
        [(GPU, at(0)), (plain, at(1))], key=str
    )


def test_an_allocation_alone_is_no_reading() -> None:
    alloc = {**POD, "container": "main", "resource": "nvidia.com/gpu"}
    assert idle_facts([Sample("guardian_pod_gpu_allocated", alloc, at(0), 1.0)]) == []
    assert idle_facts([Sample("ALERTS_FOR_STATE", alloc, at(0), at(0))]) == []


def test_holders_run_a_process_where_the_feed_lists_none() -> None:
    alloc = {**GPU, "namespace": "ml", "pod": "p", "container": "main", "resource": "r"}
    other = {**alloc, "uuid": "GPU-9"}
    raw = [
        Sample("guardian_gpu_utilization_ratio", GPU, at(0), 0.5),
        Sample("guardian_pod_gpu_allocated", alloc, at(0), 1.0),
        Sample("guardian_pod_gpu_allocated", alloc, at(1), 1.0),  # no reading at minute 1
        Sample("guardian_gpu_utilization_ratio", {**GPU, "uuid": "GPU-9"}, at(0), 0.5),
        Sample("guardian_gpu_unattributed_processes", {**GPU, "uuid": "GPU-9"}, at(0), 0.0),
        Sample("guardian_pod_gpu_allocated", other, at(0), 1.0),
    ]

    processes = holder_processes(raw)

    without = {k: v for k, v in alloc.items() if k != "resource"}
    assert processes == [Sample("guardian_pod_gpu_processes", without, at(0), 1.0)]
    everything = with_idle_facts(raw)
    assert everything[: len(raw) + 1] == [*raw, *processes]
    assert value(everything, PROCESS, 0) == at(0)
    labels = {k: v for k, v in without.items() if k != "container"}
    assert fact(everything, POD_PROCESS, 0) == Sample(POD_PROCESS, labels, at(0), at(0))
