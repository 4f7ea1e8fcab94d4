"""Which exporter's metrics the history holds: ours, or dcgm-exporter's."""

from __future__ import annotations

from guardian.adapters.prometheus import PrometheusQuerier
from guardian.engine.report.profiles import PROFILES, MetricProfile
from guardian.model.history import TimeRange


def detect_profile(querier: PrometheusQuerier, span: TimeRange, wanted: str) -> MetricProfile:
    if wanted != "auto":
        return PROFILES[wanted]
    for profile in PROFILES.values():
        window = int(min(span.end - span.start, 86400.0)) + 1  # cheap: the last day at most
        probe = f"count(last_over_time({profile.detect}[{window}s]))"
        if querier.query(probe, span.end).samples:
            return profile
    return PROFILES["guardian"]
