"""The rule engine's self-metrics, on a private registry (no global state).

Names are fixed: the shipped rule packs alert on them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from guardian.model.alerts import AlertState, GroupEvaluation

_DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class EngineMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        # Registered in this order: /metrics lists them so.
        self._register_evaluation_metrics(self.registry)
        self._register_query_metrics(self.registry)
        self._register_restore_metrics(self.registry)
        for state in (AlertState.PENDING, AlertState.FIRING):
            self.alerts.labels(state.value).set(0)

    def _register_evaluation_metrics(self, r: CollectorRegistry) -> None:
        self.group_last_duration = Gauge(
            "guardian_rule_group_last_duration_seconds",
            "Duration of the last evaluation of the rule group.",
            ["group"],
            registry=r,
        )
        self.group_duration = Histogram(
            "guardian_rule_group_evaluation_duration_seconds",
            "Duration of rule group evaluations.",
            ["group"],
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.rule_failures = Counter(
            "guardian_rule_evaluation_failures_total",
            "Rule evaluations that failed (query error, label-set collision, limit).",
            ["group", "rule"],
            registry=r,
        )
        self.rule_unhealthy = Counter(
            "guardian_rule_evaluations_unhealthy_total",
            "Rule evaluations whose answer cannot be acted on, by reason.",
            ["group", "rule", "reason"],
            registry=r,
        )
        self.iterations_missed = Counter(
            "guardian_rule_group_iterations_missed_total",
            "Evaluation slots skipped because the previous evaluation ran late.",
            ["group"],
            registry=r,
        )
        self.last_evaluation = Gauge(
            "guardian_rule_group_last_evaluation_timestamp_seconds",
            "Slot timestamp of the last evaluation of the rule group.",
            ["group"],
            registry=r,
        )
        self.alerts = Gauge("guardian_alerts", "Active alerts by state.", ["state"], registry=r)

    def _register_query_metrics(self, r: CollectorRegistry) -> None:
        self.queries = Counter(
            "guardian_prometheus_queries_total",
            "Queries sent to Prometheus/Thanos, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.query_duration = Histogram(
            "guardian_prometheus_query_duration_seconds",
            "Duration of queries to Prometheus/Thanos.",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.remote_write_failures = Counter(
            "guardian_remote_write_failures_total",
            "Remote writes of ALERTS/ALERTS_FOR_STATE that failed.",
            registry=r,
        )

    def _register_restore_metrics(self, r: CollectorRegistry) -> None:
        self.for_state_restores = Counter(
            "guardian_rule_for_state_restores_total",
            "Active alerts at the for-state restore from ALERTS_FOR_STATE, by outcome "
            "(elapsed, grace, shifted: restored; short_for, no_series, resolved, cache_newer: "
            "not).",
            ["outcome"],
            registry=r,
        )
        self.for_state_restore_failures = Counter(
            "guardian_rule_for_state_restore_failures_total",
            "Attempts to read ALERTS_FOR_STATE back from Prometheus that failed.",
            ["group"],
            registry=r,
        )

    def observe_query(self, outcome: str, seconds: float) -> None:
        self.queries.labels(outcome).inc()
        self.query_duration.observe(seconds)

    def observe_group(self, evaluation: GroupEvaluation, seconds: float) -> None:
        group = evaluation.group
        self.group_last_duration.labels(group).set(seconds)
        self.group_duration.labels(group).observe(seconds)
        self.last_evaluation.labels(group).set(evaluation.ts)
        for outcome in evaluation.outcomes:
            if outcome.health.actionable:
                continue
            if outcome.reason not in ("warnings", "partial"):
                self.rule_failures.labels(group, outcome.rule).inc()
            reason = outcome.reason or outcome.health.value
            self.rule_unhealthy.labels(group, outcome.rule, reason).inc()

    def set_alert_counts(self, pending: int, firing: int) -> None:
        self.alerts.labels(AlertState.PENDING.value).set(pending)
        self.alerts.labels(AlertState.FIRING.value).set(firing)
