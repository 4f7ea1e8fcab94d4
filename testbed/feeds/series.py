"""The idle facts of a feed written as remote-write series (:class:`TimeSeries`)."""

from __future__ import annotations

from collections.abc import Iterable

from guardian.adapters.openmetrics import Sample
from guardian.model.series import METRIC_NAME_LABEL, TimeSeries
from testbed.feeds.idle_facts import FactSetup, Restart, with_idle_facts


def as_samples(series: Iterable[TimeSeries]) -> list[Sample]:
    """Every sample of ``series``, timestamps in seconds."""
    out: list[Sample] = []
    for one in series:
        labels = {k: v for k, v in one.labels.items() if k != METRIC_NAME_LABEL}
        out += [Sample(one.name, labels, ts / 1000, value) for ts, value in one.samples]
    return out


def as_series(samples: Iterable[Sample]) -> list[TimeSeries]:
    """``samples`` as series, each in time order (timestamps in milliseconds)."""
    points: dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, float]] = {}
    for s in samples:
        key = (s.name, tuple(sorted(s.labels.items())))
        points.setdefault(key, {})[round(s.timestamp * 1000)] = s.value
    return [
        TimeSeries({METRIC_NAME_LABEL: name, **dict(labels)}, sorted(values.items()))
        for (name, labels), values in points.items()
    ]


def series_with_idle_facts(
    series: Iterable[TimeSeries],
    *,
    restarts: Iterable[Restart] = (),
    setup: FactSetup | None = None,
) -> list[TimeSeries]:
    """:func:`~testbed.feeds.idle_facts.with_idle_facts` for series: ``series``, the
    holders' processes where they list none, and the facts."""
    return as_series(with_idle_facts(as_samples(series), restarts=restarts, setup=setup))
