"""``guardian_price_per_gpu_hour``: the price table resolved for each model the GPUs report."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from guardian.app.price_metrics import MODELS_QUERY, PriceCollector, register_prices
from guardian.engine.notify.findings import PriceTable
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult

TABLE = PriceTable({"A100": 2.5, "NVIDIA H100 80GB HBM3": 4.0}, default=None, currency="€")


def answer(*models: str) -> QueryResult:
    return QueryResult(tuple(PromSample(LabelSet({"model": m}), 1.0) for m in models))


def prices(collector: PriceCollector) -> dict[str, float]:
    (family,) = collector.collect()
    assert family.name == "guardian_price_per_gpu_hour"
    return {s.labels["model"]: s.value for s in family.samples}


def test_each_reported_model_gets_the_tables_price_and_keys_their_own() -> None:
    asked: list[str] = []

    def query(expr: str, _ts: float) -> QueryResult:
        asked.append(expr)
        return answer("NVIDIA A100-SXM4-80GB", "Tesla T4", "")

    collector = PriceCollector(lambda: TABLE, query, lambda: 100.0)
    # The T4 has no price (no key, no default): no series, the dashboard's default applies.
    (family,) = collector.collect()
    assert {s.labels["currency"] for s in family.samples} == {"€"}
    assert prices(collector) == {
        "A100": 2.5,
        "NVIDIA A100-SXM4-80GB": 2.5,
        "NVIDIA H100 80GB HBM3": 4.0,
    }
    assert asked == [MODELS_QUERY]  # read once, cached for both scrapes


def test_the_default_prices_models_no_key_matches() -> None:
    table = PriceTable({"A100": 2.5}, default=1.0)
    collector = PriceCollector(lambda: table, lambda _e, _t: answer("Tesla T4"), lambda: 0.0)
    assert prices(collector) == {"A100": 2.5, "Tesla T4": 1.0}


def test_models_are_reread_after_the_refresh_and_kept_when_a_read_fails() -> None:
    now = [0.0]
    answers: list[QueryResult | Exception] = [answer("Tesla T4"), RuntimeError("down")]
    answers.append(answer("NVIDIA L4"))

    def query(_expr: str, _ts: float) -> QueryResult:
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    table = PriceTable({}, default=1.0)
    collector = PriceCollector(lambda: table, query, lambda: now[0], refresh=300.0)
    assert prices(collector) == {"Tesla T4": 1.0}
    now[0] = 299.0
    assert prices(collector) == {"Tesla T4": 1.0}  # cached: no query
    assert len(answers) == 2
    now[0] = 300.0
    assert prices(collector) == {"Tesla T4": 1.0}  # the read failed: the last models stay
    now[0] = 600.0
    assert prices(collector) == {"NVIDIA L4": 1.0}


def test_without_a_query_endpoint_only_the_keys_are_priced_and_settings_are_read_live() -> None:
    table = [TABLE]
    registry = CollectorRegistry()
    register_prices(registry, lambda: table[0], None, lambda: 0.0)
    text = generate_latest(registry).decode()
    assert 'guardian_price_per_gpu_hour{currency="€",model="A100"} 2.5' in text
    table[0] = PriceTable({"A100": 3.0})
    text = generate_latest(registry).decode()
    assert 'guardian_price_per_gpu_hour{currency="$",model="A100"} 3.0' in text
