"""Per pod and device facts a share rule reads as one sample: the pod's last process there,
and since when none of its processes showed SM use. Pure: every time comes from the caller.

A pod's processes come and go (a notebook's kernel, a container restart); the per-container
series go with them. These facts are kept per (device, pod) for ``keep_seconds`` after the
pod's last process on the device, so a rule over a window no longer than that reads their
absence as "no process of the pod in the window". A gap on the device drops them: what the
exporter did not see is never idleness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple


class PodDeviceState(NamedTuple):  # a tuple: one is made per pod and device every cycle
    last_process: float  # newest collection with a process of the pod on the device
    last_sm_active: float | None  # newest process sample of the pod with SM use above 0


@dataclass(frozen=True, slots=True)
class DeviceRun:
    """The device's side of one collection. ``fresh``: its run of readings broke."""

    taken_at: float
    fresh: bool
    keep_seconds: float


def carry_pod_devices(
    run: DeviceRun,
    present: Mapping[str, int | None],
    previous: Mapping[str, PodDeviceState],
) -> dict[str, PodDeviceState]:
    """The device's pod entries (by pod UID) after this collection: the ``present`` pods
    (pod UID -> its newest SM-active sample, µs), and pods whose last process is at most
    ``keep_seconds`` old (none after a gap)."""
    out: dict[str, PodDeviceState] = {}
    if not run.fresh:
        out = {
            key: state
            for key, state in previous.items()
            if run.taken_at - state.last_process <= run.keep_seconds
        }
    now = run.taken_at
    for key, active_us in present.items():
        earlier = out.get(key)
        active = None if earlier is None else earlier.last_sm_active
        if active_us is not None:
            seen = active_us / 1e6
            active = seen if active is None or seen > active else active
        out[key] = PodDeviceState(now, active)
    return out


def idle_since(state: PodDeviceState, observed_since: float) -> float:
    """Since when none of the pod's processes showed SM use, as far as observed."""
    if state.last_sm_active is None:
        return observed_since
    return max(observed_since, state.last_sm_active)
