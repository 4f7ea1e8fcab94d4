"""Restoring alerts' for-state after a restart, as Prometheus 2.42's ``Group.RestoreForState``
(the ``for`` logic itself is in alerting.py).

Two sources, both planned here (pure); ``app/rules/restart_restore_gather.py`` gathers them:

- the local cache (SQLite): the active maps stored at the group's last slot
  ``down_at``, resumed before the first evaluation (:func:`restore_for_state`);
- Prometheus/Thanos: the last ``ALERTS_FOR_STATE`` sample of each active alert in
  ``[now - for_outage_tolerance, now]``, applied after the second evaluation with the
  wall-clock ``now``, as Prometheus does with its own TSDB (:func:`plan_series_restore`).

Both apply Prometheus's three cases to an alert whose rule's ``for`` is at least the
``for`` grace period (``rules.alert.for-grace-period``; not the ladder's grace period;
shorter ones start over). The cache restores pending alerts (it keeps its
firing ones as stored); Prometheus, as in 2.42, any alert active after the second
evaluation, firing included (its ``for`` may have elapsed across a missed slot):

- the ``for`` had already elapsed before the outage: keep ``ActiveAt`` (fires now);
- less than the grace period left: fire one grace period after the restore;
- otherwise the outage does not count: ``ActiveAt`` moves later by the downtime.

When both know an alert, the newer observation wins: Prometheus's sample when it is
later than the cache's last slot (another replica kept evaluating, or the cache is new),
else the cache, which is exact and keeps firing alerts firing with their ``FiredAt``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol, TypeVar

from guardian.engine.rules.alert_series import ALERTS_FOR_STATE_METRIC, build_alert_series
from guardian.engine.rules.alerting import ActiveMap
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.rules import AlertingRule
from guardian.model.series import ActiveAlertSample

FOR_GRACE_PERIOD_SECONDS = 10 * 60.0
FOR_OUTAGE_TOLERANCE_SECONDS = 60 * 60.0
# PromQL's default --query.lookback-delta: how long an instant selector sees a sample.
LOOKBACK_SECONDS = 5 * 60.0


@dataclass(frozen=True)
class RestorePolicy:
    for_grace_seconds: float = FOR_GRACE_PERIOD_SECONDS
    outage_tolerance_seconds: float = FOR_OUTAGE_TOLERANCE_SECONDS


class RestoreReason(StrEnum):
    """What a restore did with one active alert (also the metric's ``outcome`` label)."""

    ELAPSED = "elapsed"  # the for had elapsed before the outage: ActiveAt kept
    GRACE = "grace"  # less than the grace period left: fires one grace period later
    SHIFTED = "shifted"  # the downtime does not count
    SHORT_FOR = "short_for"  # for < grace period: starts over, as in Prometheus
    NO_SERIES = "no_series"  # no ALERTS_FOR_STATE series for it in the window
    RESOLVED = "resolved"  # its series ended with a staleness marker: it had resolved
    CACHE_NEWER = "cache_newer"  # the local cache saw the group later than Prometheus


RESTORED = frozenset({RestoreReason.ELAPSED, RestoreReason.GRACE, RestoreReason.SHIFTED})


@dataclass(frozen=True)
class SeriesEnd:
    """The last sample of an alert's ``ALERTS_FOR_STATE`` series in the window."""

    timestamp_ms: int
    value: float  # the ActiveAt written, in unix seconds
    resolved: bool = False  # a staleness marker followed it


@dataclass(frozen=True)
class RestoreDecision:
    labels: LabelSet
    reason: RestoreReason
    active_at: float  # the ActiveAt the alert resumes with


@dataclass(frozen=True)
class RestorePlan:
    active: dict[LabelSet, Alert]
    decisions: tuple[RestoreDecision, ...]


def _resume(
    rule: AlertingRule, active_at: float, down_at: float, now: float, policy: RestorePolicy
) -> tuple[float, RestoreReason]:
    """Prometheus's three cases for an alert active since ``active_at``, down at ``down_at``."""
    remaining_ms = round((rule.for_seconds - (down_at - active_at)) * 1000)
    if remaining_ms <= 0:
        return active_at, RestoreReason.ELAPSED
    grace = policy.for_grace_seconds
    if remaining_ms < round(grace * 1000):
        return now + grace - rule.for_seconds, RestoreReason.GRACE
    return active_at + max(0.0, now - down_at), RestoreReason.SHIFTED


def restore_for_state(
    rule: AlertingRule,
    stored: ActiveMap,
    *,
    down_at: float,
    now: float,
    policy: RestorePolicy | None = None,
) -> dict[LabelSet, Alert]:
    """The active map to resume with at ``now``, from the map the cache stored at
    ``down_at``. Firing and resolved alerts keep their state (a restart never
    re-announces one); pending ones follow the three cases, or are dropped (start
    over) when ``for`` < grace period or the outage exceeded the tolerance."""
    policy = policy or RestorePolicy()
    restorable = (
        rule.for_seconds >= policy.for_grace_seconds
        and now - down_at <= policy.outage_tolerance_seconds
    )
    out: dict[LabelSet, Alert] = {}
    for labels, alert in stored.items():
        if alert.state is not AlertState.PENDING:
            out[labels] = alert
        elif restorable:
            active_at, _ = _resume(rule, alert.active_at, down_at, now, policy)
            out[labels] = replace(alert, active_at=active_at)
    return out


# ---------------------------------------------------------------- from Prometheus
def series_sample(alert: Alert, rule_labels: Mapping[str, str]) -> ActiveAlertSample:
    """What remote write reports for an active alert of a rule with ``rule_labels`` (as
    written, templates unexpanded). The one place an alert becomes a series sample: the
    restore looks up exactly the series the engine writes."""
    return ActiveAlertSample(alert.labels, alert.state, alert.active_at, rule_labels)


def for_state_labels(alert: Alert, rule_labels: Mapping[str, str]) -> LabelSet:
    """The label set of ``alert``'s ``ALERTS_FOR_STATE`` series, from the function that
    builds the written series, so the two cannot disagree."""
    for series in build_alert_series([series_sample(alert, rule_labels)], 0):
        if series.name == ALERTS_FOR_STATE_METRIC:
            return LabelSet(series.labels)
    raise ValueError(f"no {ALERTS_FOR_STATE_METRIC} series for {alert.labels}")


def _promql_string(text: str) -> str:
    # A JSON string is a valid PromQL double-quoted string (same escapes).
    return json.dumps(text, ensure_ascii=False)


def for_state_selector(alertname: str) -> str:
    """The instant selector of one rule's ``ALERTS_FOR_STATE`` series."""
    return f"{ALERTS_FOR_STATE_METRIC}{{alertname={_promql_string(alertname)}}}"


def for_state_range(alertname: str, window_seconds: float) -> str:
    """The range selector the restore reads: one millisecond wider than the window, so
    that a left-open range (Prometheus 3) still holds a sample exactly at its start;
    :func:`plan_series_restore` applies the exact, closed window."""
    return f"{for_state_selector(alertname)}[{round(window_seconds * 1000) + 1}ms]"


class _Labelled(Protocol):
    @property
    def labels(self) -> LabelSet: ...


Labelled = TypeVar("Labelled", bound=_Labelled)


def matching(
    wanted: LabelSet, candidates: Iterable[Labelled], external_labels: Mapping[str, str]
) -> list[Labelled]:
    """The candidates whose label set is ``wanted`` exactly, as Prometheus's
    ``QueryforStateSeries`` (equality on every label, then the same label count), except
    that labels Prometheus or Thanos added from our own ``external_labels`` (same name
    and value, not one of the alert's labels) do not count."""
    out: list[Labelled] = []
    for candidate in candidates:
        labels = candidate.labels
        if any(labels.get(name) != value for name, value in wanted.items()):
            continue
        extra = (name for name in labels if name not in wanted)
        if all(external_labels.get(name) == labels[name] for name in extra):
            out.append(candidate)
    return out


def ended_with_marker(
    end_ms: int, steps_ms: Sequence[int], present_ms: Collection[int], interval_ms: int
) -> bool:
    """Did a staleness marker follow the sample at ``end_ms``? PromQL drops markers from
    range answers, so look at the instant selector (``present_ms``: the ``steps_ms`` where
    it had a value) at the first step one evaluation interval after the sample: a marker
    hides the sample there, while without one the sample is still within the lookback.
    No such step yet, or one beyond the lookback, tells nothing: no marker assumed."""
    probe = next((s for s in steps_ms if s >= end_ms + interval_ms), None)
    if probe is None or probe - end_ms >= round(LOOKBACK_SECONDS * 1000):
        return False
    return probe not in present_ms


def _from_series(
    rule: AlertingRule,
    end: SeriesEnd | None,
    *,
    now: float,
    cache_down_at: float | None,
    policy: RestorePolicy,
) -> tuple[RestoreReason, float | None]:
    """The decision for one active alert and, when restored, its new ActiveAt."""
    if rule.for_seconds < policy.for_grace_seconds:
        return RestoreReason.SHORT_FOR, None
    now_ms = math.floor(now * 1000)
    window_ms = round(policy.outage_tolerance_seconds * 1000)
    if end is None or not now_ms - window_ms <= end.timestamp_ms <= now_ms:
        return RestoreReason.NO_SERIES, None
    if end.resolved:
        return RestoreReason.RESOLVED, None
    if cache_down_at is not None and round(cache_down_at * 1000) >= end.timestamp_ms:
        return RestoreReason.CACHE_NEWER, None
    # As Prometheus: down at the sample's whole second, active since the value's.
    down_at = float(end.timestamp_ms // 1000)
    active_at, reason = _resume(rule, float(math.trunc(end.value)), down_at, now, policy)
    return reason, active_at


def plan_series_restore(
    rule: AlertingRule,
    active: ActiveMap,
    found: Mapping[LabelSet, SeriesEnd],
    *,
    now: float,
    cache_down_at: float | None,
    policy: RestorePolicy | None = None,
) -> RestorePlan:
    """Restore the active alerts of ``active`` (the rule's map after its second
    evaluation) from ``found``, each alert's last ``ALERTS_FOR_STATE`` sample. Only
    ``ActiveAt`` changes: a pending alert's next evaluation decides whether it fires, a
    firing one (its ``for`` elapsed in those two evaluations, e.g. across a missed slot)
    stays firing with its ``FiredAt``, as in Prometheus. The cache, when newer, wins.
    ``cache_down_at``: the last slot the local cache had stored for the group, if any."""
    policy = policy or RestorePolicy()
    out = dict(active)
    decisions: list[RestoreDecision] = []
    for labels, alert in active.items():
        if not alert.is_active:
            continue
        reason, active_at = _from_series(
            rule, found.get(labels), now=now, cache_down_at=cache_down_at, policy=policy
        )
        if active_at is not None:
            out[labels] = replace(alert, active_at=active_at)
        decisions.append(RestoreDecision(labels, reason, out[labels].active_at))
    return RestorePlan(out, tuple(decisions))
