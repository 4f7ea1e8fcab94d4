"""Facts an idle rule reads as one sample: last activity, unbroken observation, windowed peaks.

Pure: every time comes from the caller. What the exporter did not see is never idleness, so
each fact says since when it was observed without a gap, and a peak is only given once its
whole window was observed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from exporter.engine.utilization import clamp_percent
from exporter.model.readings import DeviceReading, MigState

SLOTS = 60  # closed slots per window; with the open one a ring covers 60 to 61 sixtieths
_NONE = float("-inf")  # a slot without a value
_EMPTY = (_NONE,) * SLOTS


@dataclass(frozen=True, slots=True)
class ObservationSetup:
    """``activity_floor``: the utilization ratio above which a device counts as active (the
    shipped rules' noise floor). Readings further apart than ``gap_seconds`` are a gap."""

    activity_floor: float = 0.05
    gap_seconds: float = 15.0  # 3 x the default 5 s interval
    memory_peak_window: float = 3600.0
    activity_peak_window: float = 1800.0
    # A MIG device holding this much memory counts as having a process: without MIG
    # monitoring rights NVML can list none on a slice that holds memory.
    mig_memory_floor: int = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PeakRing:
    """Maxima of equal time slots (window / SLOTS wide): constant memory per series.

    ``closed`` are the SLOTS slots before ``head`` (the slot of the newest reading), oldest
    first; ``current`` is the open slot's maximum.
    """

    since: float  # the first reading of this unbroken run
    head: int
    closed: tuple[float, ...]
    closed_max: float
    current: float

    def peak(self, now: float, window: float) -> float | None:
        """The peak once the whole window was observed, else None (never "low")."""
        if now - self.since < window:
            return None
        top = max(self.closed_max, self.current)
        return None if top == _NONE else top


def new_ring(now: float, width: float) -> PeakRing:
    return PeakRing(now, int(now // width), _EMPTY, _NONE, _NONE)


def record(
    ring: PeakRing, points: Iterable[tuple[float, float]], now: float, width: float
) -> PeakRing:
    """``ring`` with the (time, value) points added, its head moved to ``now``'s slot.

    A clock stepping back a slot or more starts the ring again: its slots no longer say
    when. A point ahead of ``now`` counts in the open slot; one older than the ring is dropped.
    """
    head = int(now // width)
    if head < ring.head:
        ring = new_ring(now, width)
    closed, current, closed_max = ring.closed, ring.current, ring.closed_max
    if head != ring.head:
        shift = head - ring.head
        closed = (*closed, current, *_EMPTY[: shift - 1])[-SLOTS:] if shift <= SLOTS else _EMPTY
        current, closed_max = _NONE, max(closed)
    late: list[float] | None = None
    for at, value in points:
        age = head - int(at // width)
        if age <= 0:
            if value > current:
                current = value
        elif age <= SLOTS and value > closed[SLOTS - age]:
            late = late or list(closed)
            late[SLOTS - age] = max(late[SLOTS - age], value)
    if late is not None:
        closed, closed_max = tuple(late), max(late)
    return PeakRing(ring.since, head, closed, closed_max, current)


@dataclass(frozen=True, slots=True)
class DeviceObservation:
    """What the exporter carries per device from one collection to the next."""

    since: float
    last_active: float | None
    last_process: float | None  # newest collection with a process (MIG: or memory held)
    memory: PeakRing | None  # None: memory unknown in the last reading
    activity: PeakRing | None  # None: no utilization in the last reading


@dataclass(frozen=True, slots=True)
class Activity:
    """One reading's utilization, reduced in one pass: the newest time above the floor,
    and the (time, ratio) points for the peak ring (one per slot that had samples)."""

    newest_active: float | None
    points: tuple[tuple[float, float], ...]


def reduce_utilization(
    dev: DeviceReading, taken_at: float, floor: float, slot_width: float
) -> Activity:
    """The driver's samples at their own times, or, where it gives none (unsupported), the
    reading at the collection time. Samples in the open slot (the common case) cost one
    comparison each; clamping is monotonic, so it is done once on the maximum."""
    if dev.util_samples is None:
        if dev.utilization_percent is None:
            return Activity(None, ())
        ratio = clamp_percent(dev.utilization_percent) / 100.0
        return Activity(taken_at if ratio > floor else None, ((taken_at, ratio),))
    # clamp(p) > floor exactly when p > floor, for a floor under 100 %
    floor_pct = floor * 100.0 if floor < 1.0 else math.inf
    width_us = slot_width * 1e6
    open_slot = int(taken_at // slot_width)
    open_us = open_slot * width_us
    newest_us, top = -1.0, _NONE
    older: dict[int, float] = {}  # an earlier slot's maximum: a late collection
    for sample in dev.util_samples:
        at_us, pct = sample.timestamp_us, sample.percent
        if pct > floor_pct and at_us > newest_us:
            newest_us = at_us
        if at_us >= open_us:
            if pct > top:
                top = pct
        else:
            slot = int(at_us // width_us)
            if pct > older.get(slot, _NONE):
                older[slot] = pct
    points = [((slot + 0.5) * slot_width, clamp_percent(p) / 100.0) for slot, p in older.items()]
    if top != _NONE:
        points.append((taken_at, clamp_percent(top) / 100.0))
    return Activity(newest_us / 1e6 if newest_us >= 0.0 else None, tuple(points))


def _carry(
    ring: PeakRing | None, fresh: bool, points: list[tuple[float, float]], now: float, width: float
) -> PeakRing:
    start = new_ring(now, width) if ring is None or fresh else ring
    return record(start, points, now, width)


def observe_device(
    dev: DeviceReading,
    previous: DeviceObservation | None,
    fresh: bool,
    process_active_us: int | None,
    setup: ObservationSetup,
    taken_at: float,
) -> DeviceObservation:
    """The device's observation after this reading. ``fresh``: the run of readings broke
    (first reading, or a gap), so observation starts again now."""
    width = setup.activity_peak_window / SLOTS
    activity_now = reduce_utilization(dev, taken_at, setup.activity_floor, width)
    last_active = None if previous is None else previous.last_active
    newest = activity_now.newest_active
    if newest is not None and (last_active is None or newest > last_active):
        last_active = newest
    if process_active_us is not None:
        at = process_active_us / 1e6
        last_active = at if last_active is None else max(last_active, at)
    memory = activity = None
    if dev.memory_used_bytes is not None:
        ring = None if previous is None else previous.memory
        memory = _carry(
            ring, fresh, [(taken_at, float(dev.memory_used_bytes))], taken_at,
            setup.memory_peak_window / SLOTS,
        )  # fmt: skip
    if dev.util_samples is not None or dev.utilization_percent is not None:
        ring = None if previous is None else previous.activity
        activity = _carry(ring, fresh, list(activity_now.points), taken_at, width)
    since = taken_at if previous is None or fresh else previous.since
    last_process = None if previous is None else previous.last_process
    if _in_use(dev, setup.mig_memory_floor):
        last_process = taken_at
    return DeviceObservation(since, last_active, last_process, memory, activity)


def _in_use(dev: DeviceReading, mig_memory_floor: int) -> bool:
    """A process is listed on the device, or a MIG device holds memory (see the setup)."""
    if dev.processes:
        return True
    used = dev.memory_used_bytes
    return dev.mig is MigState.INSTANCE and used is not None and used >= mig_memory_floor
