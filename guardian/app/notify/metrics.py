"""The notifier's metrics on a private registry. Outbox depth is read from the database at
scrape time, so it is right after a restart and while Slack is down."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class _OutboxCollector(Collector):
    def __init__(self, depth: Callable[[], dict[str, int]]) -> None:
        self._depth = depth

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauge = GaugeMetricFamily(
            "guardian_slack_outbox_depth",
            "Slack message operations waiting in the durable outbox, per channel queue.",
            labels=["channel"],
        )
        for channel, count in sorted(self._depth().items()):
            gauge.add_metric([channel], count)
        yield gauge


class NotifierMetrics:
    def __init__(
        self, registry: CollectorRegistry | None, depth: Callable[[], dict[str, int]]
    ) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        r.register(_OutboxCollector(depth))
        self.requests = Counter(
            "guardian_slack_requests_total",
            "Slack calls by operation and result (ok, rate_limited, uncertain, unauthorized, "
            "gone, rejected, error).",
            ["op", "result"],
            registry=r,
        )
        self.reconciled = Counter(
            "guardian_slack_reconciled_total",
            "Messages that may have reached Slack before a crash or error, looked up before "
            "re-posting, by whether they were found.",
            ["found"],
            registry=r,
        )
        self.dead = Counter(
            "guardian_slack_dead_letters_total",
            "Operations Slack refused for good (they stay in the outbox as 'dead').",
            registry=r,
        )
