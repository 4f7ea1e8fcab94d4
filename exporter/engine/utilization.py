"""Utilization arithmetic: per-process aggregation and the busy-seconds integral."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from exporter.model.readings import ProcessUtilSample, UtilSample


def clamp_percent(value: float) -> float:
    """Drivers have returned junk above 100 (and garbage generally); keep 0-100."""
    if value != value:  # NaN
        return 0.0
    return 0.0 if value < 0 else 100.0 if value > 100 else value


@dataclass(frozen=True, slots=True)
class ProcessSummary:
    """One cycle's per-process samples of one device, reduced in one pass."""

    sums: dict[int, float]  # clamped SM percent, summed per PID
    counts: dict[int, int]
    last_active_us: dict[int, int]  # newest sample time with non-zero SM use, per PID
    # Newest sample time at which any PID's SM use was above the activity floor.
    active_us: int | None
    oldest_us: int | None
    newest_us: int | None
    min_gap_us: int | None  # smallest gap between distinct sample times: the sampling period


def summarize_process_samples(
    samples: Iterable[ProcessUtilSample], floor_percent: float = 0.0
) -> ProcessSummary:
    """This runs on every sample of every cycle, so it is written for speed."""
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    latest: dict[int, int] = {}
    active = -1
    times: set[int] = set()
    for s in samples:
        value = s.sm_percent
        if value > 100.0:
            value = 100.0
        elif not value > 0.0:  # negative or NaN
            value = 0.0
        pid = s.pid
        ts = s.timestamp_us
        times.add(ts)
        if pid in sums:
            sums[pid] += value
            counts[pid] += 1
        else:
            sums[pid] = value
            counts[pid] = 1
        if value > 0.0:
            if ts > latest.get(pid, -1):
                latest[pid] = ts
            if value > floor_percent and ts > active:
                active = ts
    ordered = sorted(times)
    gaps = [b - a for a, b in pairwise(ordered)]
    return ProcessSummary(
        sums=sums,
        counts=counts,
        last_active_us=latest,
        active_us=None if active < 0 else active,
        oldest_us=ordered[0] if ordered else None,
        newest_us=ordered[-1] if ordered else None,
        min_gap_us=min(gaps) if gaps else None,
    )


def sm_percent_by_pid(
    summary: ProcessSummary, period_us: int | None, window_us: float | None
) -> dict[int, float]:
    """Each PID's SM use averaged over time, 0-100.

    The driver reports a process only in the sampling periods in which it used the GPU, so a
    plain mean of its samples would read a process busy 1 period in 30 as fully busy. Each
    sample stands for one sampling period; periods without a sample count as 0, over the
    window since the previous collection. Until the period is known (one sample time seen so
    far) the mean of the samples is the best estimate.
    """
    if period_us is None or summary.newest_us is None or summary.oldest_us is None:
        return {pid: total / summary.counts[pid] for pid, total in summary.sums.items()}
    if window_us is None:  # the first read returns the driver's whole buffer
        window_us = summary.newest_us - summary.oldest_us + period_us
    window_us = max(window_us, float(period_us))
    return {pid: min(100.0, total * period_us / window_us) for pid, total in summary.sums.items()}


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
