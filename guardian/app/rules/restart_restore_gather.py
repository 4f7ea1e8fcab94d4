"""For-state restore from Prometheus: gather each active alert's last ``ALERTS_FOR_STATE``
sample, then apply the engine's plan (``guardian/engine/rules/restart_restore.py``).

Per rule whose ``for`` is at least the grace period, two queries at the wall-clock now:

- ``ALERTS_FOR_STATE{alertname="X"}[window]``: each series' raw samples, for its last one;
- the same instant selector over the window at the group's slots (``query_range``): where
  it had no value one interval after a series' last sample, a staleness marker had ended
  the series (the alert resolved). PromQL answers never show the markers themselves.

Matching follows the label set the engine writes (see ``for_state_labels``), with
labels from our own ``external_labels`` allowed on top (Thanos and federation add them).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from guardian.app.rules.metrics import EngineMetrics
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.restart_restore import (
    RESTORED,
    RestorePlan,
    RestorePolicy,
    SeriesEnd,
    ended_with_marker,
    for_state_labels,
    for_state_range,
    for_state_selector,
    matching,
    plan_series_restore,
)
from guardian.engine.rules.slots import slot_at_or_before
from guardian.model.alerts import Alert
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, RangeSeries
from guardian.model.rules import AlertingRule
from guardian_common.errors import TransientError

logger = logging.getLogger(__name__)

# Attempts per group (after its 2nd, 3rd, ... evaluation) while Prometheus is unreachable.
MAX_ATTEMPTS = 3
# Prometheus refuses a query_range of more than 11,000 points per series.
_MAX_STEPS = 10_000

GroupState = dict[str, dict[LabelSet, Alert]]


class ForStateQuerier(Protocol):
    def query_matrix(self, expr: str, ts: float) -> MatrixResult: ...

    def query_range(self, expr: str, start: float, end: float, step: float) -> MatrixResult: ...


class IncompleteAnswerError(TransientError):
    """Prometheus/Thanos answered with warnings (e.g. a store missing): missing series
    would look like alerts that start over, so the answer is not used."""


@dataclass
class PendingRestore:
    """A group of the first load that has yet to restore from Prometheus."""

    cache_down_at: float | None = None  # the local cache's last slot for the group
    evaluations: int = 0
    attempts: int = 0


def _complete(answer: MatrixResult) -> MatrixResult:
    if answer.warnings or answer.partial:
        raise IncompleteAnswerError("; ".join(answer.warnings) or "partial response")
    return answer


class ForStateRestorer:
    def __init__(
        self,
        querier: ForStateQuerier,
        *,
        external_labels: Mapping[str, str],
        policy: RestorePolicy,
        metrics: EngineMetrics,
    ) -> None:
        self.querier = querier
        self.external_labels = dict(external_labels)
        self.policy = policy
        self.metrics = metrics

    def restore(
        self, group: CompiledGroup, state: GroupState, *, now: float, cache_down_at: float | None
    ) -> GroupState:
        """``state`` with the active alerts of every rule restored. Raises the first
        query's error (Transient/PermanentError): then nothing is restored.
        ``cache_down_at``: the local cache's last slot for the group, if it had one."""
        out = dict(state)
        plans: list[tuple[str, RestorePlan]] = []
        for key, compiled in group.rules:
            rule = compiled.rule
            active = state.get(key, {})
            wanted = {
                labels: for_state_labels(alert, rule.labels)
                for labels, alert in active.items()
                if alert.is_active
            }
            found: dict[LabelSet, SeriesEnd] = {}
            if wanted and rule.for_seconds >= self.policy.for_grace_seconds:
                found = self._gather(group, rule, wanted, now)
            plan = plan_series_restore(
                rule,
                active,
                found,
                now=now,
                cache_down_at=cache_down_at,
                policy=self.policy,
            )
            out[key] = plan.active
            plans.append((rule.name, plan))
        for name, plan in plans:
            self._report(group.name, name, plan)
        return out

    def _gather(
        self,
        group: CompiledGroup,
        rule: AlertingRule,
        wanted: Mapping[LabelSet, LabelSet],
        now: float,
    ) -> dict[LabelSet, SeriesEnd]:
        """Each wanted alert's last sample, for the alerts that have one in the window."""
        window = self.policy.outage_tolerance_seconds
        answer = _complete(self.querier.query_matrix(for_state_range(rule.name, window), now))
        last: dict[LabelSet, tuple[int, float]] = {}
        for labels, series_labels in wanted.items():
            ends = [s.samples[-1] for s in self._matching(series_labels, answer) if s.samples]
            if ends:
                last[labels] = max(ends)  # the newest of any matching series
        if not last:
            return {}
        steps, present = self._presence(group, rule.name, now)
        interval_ms = round(group.interval_seconds * 1000)
        out: dict[LabelSet, SeriesEnd] = {}
        for labels, (t, value) in last.items():
            seen = {ms for s in self._matching(wanted[labels], present) for ms, _ in s.samples}
            out[labels] = SeriesEnd(t, value, ended_with_marker(t, steps, seen, interval_ms))
        return out

    def _matching(self, wanted: LabelSet, answer: MatrixResult) -> list[RangeSeries]:
        return matching(wanted, answer.series, self.external_labels)

    def _presence(
        self, group: CompiledGroup, alertname: str, now: float
    ) -> tuple[list[int], MatrixResult]:
        """The steps (ms) of the window on the group's slots, and where the rule's
        instant selector had a value at each."""
        window = self.policy.outage_tolerance_seconds
        step = max(group.interval_seconds, window / _MAX_STEPS)
        start = now - window
        if step == group.interval_seconds:
            start = slot_at_or_before(start, group.group.file, group.name, step)
        start_ms, step_ms, end_ms = round(start * 1000), round(step * 1000), math.floor(now * 1000)
        answer = self.querier.query_range(
            for_state_selector(alertname), start_ms / 1000, end_ms / 1000, step_ms / 1000
        )
        return list(range(start_ms, end_ms + 1, step_ms)), _complete(answer)

    def _report(self, group: str, rule: str, plan: RestorePlan) -> None:
        counts = Counter(d.reason for d in plan.decisions)
        for reason, count in counts.items():
            self.metrics.for_state_restores.labels(reason.value).inc(count)
        for decision in plan.decisions:
            logger.debug(
                "group %s rule %s: %s: %s, active since %.3f",
                group,
                rule,
                decision.labels,
                decision.reason.value,
                decision.active_at,
            )
        if counts:
            restored = sum(n for reason, n in counts.items() if reason in RESTORED)
            logger.info(
                "group %s rule %s: for-state of %s of %s active alert(s) restored from "
                "Prometheus (%s)",
                group,
                rule,
                restored,
                len(plan.decisions),
                ", ".join(f"{reason.value} {n}" for reason, n in sorted(counts.items())),
            )
