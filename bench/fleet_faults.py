"""The per-node pipeline faults of the guardian fleet (fleet_guardian.py): NVML down,
scrapes failing, vanished exporters and removed nodes, a frozen exporter, lost samples
(a gap long enough that the exporter's observation starts again), missing pod labels."""

from __future__ import annotations

from typing import Any

from fleet_core import Series, Timeline
from fleet_facts import restart_facts
from fleet_shapes import clip, const, frozen_at, punch

DEVICE_FAMILIES = ("guardian_gpu_", "guardian_pod_gpu_", "guardian_pod_device_")


def apply_fault(node: Any, node_series: list[Series], t: Timeline) -> None:
    """Apply ``node.fault`` to the node's series (its facts included)."""
    fault = node.fault
    hi = t.steps
    by_name: dict[str, list[Series]] = {}
    for s in node_series:
        by_name.setdefault(s.name, []).append(s)
    if fault == "nvml_down":
        d = t.at(-25)
        for s in node_series:
            if s.name.startswith(DEVICE_FAMILIES) and s.name != "guardian_pod_gpu_allocated":
                clip(s, d)
        (up,) = by_name["guardian_exporter_nvml_up"]
        up.segments = const("1", 0, d) + const("0", d, hi)
        (last,) = by_name["guardian_exporter_last_success_timestamp_seconds"]
        clip(last, d)
        last.segments += const(frozen_at(t, node.clock, d), d, hi)
    elif fault == "scrape_failing":
        f = t.at(-20)
        for s in node_series:
            clip(s, f)
        (up,) = by_name["up"]
        up.segments += const("0", f, hi)
    elif fault in ("vanished", "removed"):
        for s in node_series:
            clip(s, t.at(-20))
    elif fault == "frozen":
        f = t.at(-10)
        (last,) = by_name["guardian_exporter_last_success_timestamp_seconds"]
        clip(last, f)
        last.segments += const(frozen_at(t, node.clock, f), f, hi)
        (stale,) = by_name["guardian_exporter_snapshot_stale"]
        stale.segments = const("0", 0, f) + const("1", f, hi)
    elif fault == "gap":
        for s in node_series:
            punch(s, t.at(-8), t.at(-5))
        restart_facts(t, node.clock, node_series, t.at(-8), t.at(-5))
    elif fault == "missing_pod":
        (kube,) = by_name["guardian_exporter_kube_up"]
        kube.segments = const("0", 0, hi)
