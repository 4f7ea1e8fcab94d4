"""Utilization arithmetic: per-process aggregation and the busy-seconds integral."""

from __future__ import annotations

from collections.abc import Iterable

from exporter.model.readings import ProcessUtilSample, UtilSample


def clamp_percent(value: float) -> float:
    """Drivers have returned junk above 100 (and garbage generally); keep 0-100."""
    if value != value:  # NaN
        return 0.0
    return 0.0 if value < 0 else 100.0 if value > 100 else value


def summarize_process_samples(
    samples: Iterable[ProcessUtilSample],
) -> tuple[dict[int, float], dict[int, int]]:
    """One pass: mean clamped SM percent per PID, and its newest non-zero sample time (µs).

    The same results as ``mean_sm_by_pid`` and ``last_active_us_by_pid``; this runs on every
    sample of every cycle, so it is written for speed.
    """
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    latest: dict[int, int] = {}
    for s in samples:
        value = s.sm_percent
        if value > 100.0:
            value = 100.0
        elif not value > 0.0:  # negative or NaN
            value = 0.0
        pid = s.pid
        if pid in sums:
            sums[pid] += value
            counts[pid] += 1
        else:
            sums[pid] = value
            counts[pid] = 1
        if value > 0.0 and s.timestamp_us > latest.get(pid, -1):
            latest[pid] = s.timestamp_us
    return {pid: total / counts[pid] for pid, total in sums.items()}, latest


def mean_sm_by_pid(samples: Iterable[ProcessUtilSample]) -> dict[int, float]:
    """Mean clamped SM percent per PID over the samples of one cycle."""
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for s in samples:
        sums[s.pid] = sums.get(s.pid, 0.0) + clamp_percent(s.sm_percent)
        counts[s.pid] = counts.get(s.pid, 0) + 1
    return {pid: sums[pid] / counts[pid] for pid in sums}


def last_active_us_by_pid(samples: Iterable[ProcessUtilSample]) -> dict[int, int]:
    """The newest timestamp (µs) at which each PID had non-zero SM use."""
    latest: dict[int, int] = {}
    for s in samples:
        if clamp_percent(s.sm_percent) > 0 and s.timestamp_us > latest.get(s.pid, -1):
            latest[s.pid] = s.timestamp_us
    return latest


def integrate_busy(
    samples: Iterable[UtilSample], previous_us: int | None
) -> tuple[float, int | None]:
    """Busy seconds covered by ``samples`` and the newest timestamp seen.

    A driver sample's value holds for the period ending at its timestamp, so each sample
    contributes value x (its timestamp - the previous one). The very first sample only sets
    the baseline. Samples at or before ``previous_us`` were already counted and are skipped.
    """
    busy = 0.0
    last = previous_us
    for s in sorted(samples, key=lambda x: x.timestamp_us):
        if last is not None and s.timestamp_us <= last:
            continue
        if last is not None:
            busy += clamp_percent(s.percent) / 100.0 * (s.timestamp_us - last) / 1e6
        last = s.timestamp_us
    return busy, last
