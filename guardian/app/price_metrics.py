"""``guardian_price_per_gpu_hour{model}``: the controller's price table as a series, so that
Grafana prices idle GPUs per model exactly as ``guardian report`` and Slack do.

PromQL joins labels by equality, and the table's keys match model names as substrings
(``A100`` prices ``NVIDIA A100-SXM4-80GB``), so the series carry the table resolved for
each model name the GPUs report: ``guardian_gpu_info``'s ``model`` and dcgm-exporter's
``modelName``, read through the engine's query endpoint (at most once per ``refresh``
seconds, at scrape time; the last answer stays when a read fails), and for each
``per_model`` key as it is written. A model with no price (no key matches it and no
``default``) has no series: the dashboards fall back to their own default.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from guardian.engine.notify.findings import PriceTable
from guardian.model.query import QueryResult

logger = logging.getLogger(__name__)

MODELS_QUERY = (
    'group by (model) (guardian_gpu_info{model!=""}'
    ' or label_replace(DCGM_FI_DEV_FB_USED{modelName!=""}, "model", "$1", "modelName", "(.*)"))'
)

Query = Callable[[str, float], QueryResult]


class PriceCollector(Collector):
    def __init__(
        self,
        prices: Callable[[], PriceTable],
        query: Query | None,
        clock: Callable[[], float],
        refresh: float = 300.0,
    ) -> None:
        self._prices = prices
        self._query = query
        self._clock = clock
        self._refresh = refresh
        self._models: frozenset[str] = frozenset()
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def models(self) -> frozenset[str]:
        """The model names the GPUs report, re-read when older than ``refresh``."""
        now = self._clock()
        with self._lock:
            fresh = self._read_at is not None and now - self._read_at < self._refresh
            if self._query is None or fresh:
                return self._models
            self._read_at = now
            try:
                result = self._query(MODELS_QUERY, now)
            except Exception as exc:  # a scrape must not fail on Prometheus
                logger.warning("GPU models for the price series: %s", exc)
                return self._models
            self._models = frozenset(s.labels.get("model", "") for s in result.samples) - {""}
            return self._models

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """What it serves, without asking Prometheus (registering calls this, at start)."""
        yield _family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        table = self._prices()
        gauge = _family()
        for model in sorted(self.models() | set(table.per_model)):
            price = table.price(model)
            if price is not None:
                gauge.add_metric([model, table.currency], price)
        yield gauge


def _family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "guardian_price_per_gpu_hour",
        "Price of one GPU-hour by GPU model, from the prices settings (the table "
        "guardian report and Slack use), for each model the GPUs report and each key.",
        labels=["model", "currency"],
    )


def register_prices(
    registry: CollectorRegistry,
    prices: Callable[[], PriceTable],
    query: Query | None,
    clock: Callable[[], float],
) -> PriceCollector:
    collector = PriceCollector(prices, query, clock)
    registry.register(collector)
    return collector
