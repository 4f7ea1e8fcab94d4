"""The Alertmanager output's metrics, with Prometheus's notifier names under our prefix,
so the same dashboards and alerts work for both."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class AlertmanagerMetrics:
    """Implements the queue's observer (guardian/adapters/alert_queue.py)."""

    def __init__(self, registry: CollectorRegistry | None = None, capacity: int = 0) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.sent_total = Counter(
            "guardian_alertmanager_notifications_sent_total",
            "Alerts an Alertmanager accepted.",
            ["alertmanager"],
            registry=r,
        )
        self.errors_total = Counter(
            "guardian_alertmanager_notifications_errors_total",
            "Batches an Alertmanager did not accept (error, timeout, refusal).",
            ["alertmanager"],
            registry=r,
        )
        self.dropped_total = Counter(
            "guardian_alertmanager_notifications_dropped_total",
            "Alerts never delivered: queue_full (the oldest dropped past the capacity), "
            "rejected (every Alertmanager refused them for good), no_alertmanager.",
            ["reason"],
            registry=r,
        )
        self.queue_length = Gauge(
            "guardian_alertmanager_notifications_queue_length",
            "Alerts waiting to be sent.",
            registry=r,
        )
        self.queue_capacity = Gauge(
            "guardian_alertmanager_notifications_queue_capacity",
            "The queue's capacity.",
            registry=r,
        )
        self.queue_capacity.set(capacity)
        self.latency = Histogram(
            "guardian_alertmanager_notification_latency_seconds",
            "Time to post one batch to one Alertmanager.",
            ["alertmanager"],
            registry=r,
        )
        self.silence_queries = Counter(
            "guardian_alertmanager_silence_queries_total",
            "Silence and inhibition lookups of remediation cycles, by Alertmanager and "
            "result (ok, error).",
            ["alertmanager", "result"],
            registry=r,
        )

    def sent(self, alertmanager: str, alerts: int, seconds: float) -> None:
        self.sent_total.labels(alertmanager).inc(alerts)
        self.latency.labels(alertmanager).observe(seconds)

    def failed(self, alertmanager: str, seconds: float) -> None:
        self.errors_total.labels(alertmanager).inc()
        self.latency.labels(alertmanager).observe(seconds)

    def dropped(self, reason: str, alerts: int) -> None:
        self.dropped_total.labels(reason).inc(alerts)

    def queued(self, length: int) -> None:
        self.queue_length.set(length)
