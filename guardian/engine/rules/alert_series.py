"""The ``ALERTS`` and ``ALERTS_FOR_STATE`` series of an evaluation, as Prometheus writes them.

Prometheus 2.42 (``AlertingRule.sample`` and ``forStateSample`` in rules/alerting.go)
builds both label sets from a ``labels.Builder`` whose base is the rule's labels *as
written* (templates unexpanded), overlays the alert's labels, then sets ``__name__`` and
``alertname`` (and ``alertstate`` for ``ALERTS``). The base keeps its quirks:

- a label whose template expands to "" is absent from the alert, but present in the
  series with the template text as its value;
- a rule label written as "" is dropped (the builder deletes empty base values);
- an ``alertstate`` label of the query result stays in ``ALERTS_FOR_STATE``.

For every pending or firing alert, at the evaluation timestamp:

- ``ALERTS{…, alertstate="pending|firing"} = 1``
- ``ALERTS_FOR_STATE{…} = ActiveAt`` in whole unix seconds (Go's ``Unix()`` truncates)

and a staleness marker for every series written at the previous evaluation and not at
this one, so that a resolved alert's ``ALERTS`` series ends instead of lingering for the
5-minute lookback. Inactive (resolved) alerts write nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from guardian.model.series import (
    METRIC_NAME_LABEL,
    STALE_NAN,
    ActiveAlertSample,
    LabelKey,
    TimeSeries,
    label_key,
)

ALERTS_METRIC = "ALERTS"
ALERTS_FOR_STATE_METRIC = "ALERTS_FOR_STATE"
ALERT_STATE_LABEL = "alertstate"
ALERT_NAME_LABEL = "alertname"


def _sorted(series: Iterable[TimeSeries]) -> list[TimeSeries]:
    return sorted(series, key=lambda s: (s.name, s.key))


def series_labels(alert: ActiveAlertSample) -> dict[str, str]:
    """The labels both series share: raw rule labels, the alert's labels over them."""
    labels = {name: value for name, value in alert.rule_labels.items() if value}
    labels.update((name, value) for name, value in alert.labels.items() if value)
    labels[ALERT_NAME_LABEL] = alert.labels[ALERT_NAME_LABEL]
    return labels


def build_alert_series(alerts: Iterable[ActiveAlertSample], timestamp_ms: int) -> list[TimeSeries]:
    """The ``ALERTS`` and ``ALERTS_FOR_STATE`` samples for ``alerts`` at ``timestamp_ms``.

    The result is sorted by metric name, then by label set. Two alerts with the same label
    set (two rules with the same name and labels) give one series each, not a duplicate
    sample that the receiver would reject: ``ALERTS_FOR_STATE`` then reports the earlier
    ``active_at``.
    """
    alerts_values: dict[LabelKey, dict[str, str]] = {}
    for_state: dict[LabelKey, tuple[dict[str, str], float]] = {}
    for alert in alerts:
        base = series_labels(alert)
        firing_labels = {
            **base,
            METRIC_NAME_LABEL: ALERTS_METRIC,
            ALERT_STATE_LABEL: alert.state.value,
        }
        alerts_values.setdefault(label_key(firing_labels), firing_labels)

        # Go's time.Unix() floors to whole seconds; the value is a float of that.
        active_at = float(math.floor(alert.active_at))
        state_labels = {**base, METRIC_NAME_LABEL: ALERTS_FOR_STATE_METRIC}
        key = label_key(state_labels)
        known = for_state.get(key)
        if known is None or active_at < known[1]:
            for_state[key] = (state_labels, active_at)

    series = [TimeSeries(labels, [(timestamp_ms, 1.0)]) for labels in alerts_values.values()]
    series += [
        TimeSeries(labels, [(timestamp_ms, active_at)]) for labels, active_at in for_state.values()
    ]
    return _sorted(series)


def stale_series(
    previous: Iterable[TimeSeries], current: Iterable[TimeSeries], timestamp_ms: int
) -> list[TimeSeries]:
    """Staleness markers at ``timestamp_ms`` for the series of ``previous`` absent from ``current``.

    ``previous`` is what was written at the last evaluation, ``current`` what is written at
    this one. The markers go in the same write as ``current``. Sorted like
    :func:`build_alert_series`.
    """
    now = {series.key for series in current}
    gone: dict[LabelKey, TimeSeries] = {}
    for series in previous:
        if series.key not in now and series.key not in gone:
            gone[series.key] = TimeSeries(series.labels, [(timestamp_ms, STALE_NAN)])
    return _sorted(gone.values())
