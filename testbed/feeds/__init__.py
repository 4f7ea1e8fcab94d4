"""Feeds' helpers: what GPU Guardian's exporter would have reported for a synthetic history.

Tests and benchmarks build raw exporter series (utilization, memory, processes, allocation);
:mod:`testbed.feeds.idle_facts` adds the idle facts the guardian rule pack reads;
:mod:`testbed.feeds.series` does it for remote-write series.
"""

from testbed.feeds.idle_facts import (
    FACTS,
    FactSetup,
    Restart,
    holder_processes,
    idle_facts,
    latest,
    with_idle_facts,
)
from testbed.feeds.series import as_samples, as_series, series_with_idle_facts

__all__ = [
    "FACTS",
    "FactSetup",
    "Restart",
    "as_samples",
    "as_series",
    "holder_processes",
    "idle_facts",
    "latest",
    "series_with_idle_facts",
    "with_idle_facts",
]
