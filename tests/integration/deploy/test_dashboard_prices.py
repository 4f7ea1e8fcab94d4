"""The dashboard's idle cost is ``guardian report``'s: both price each GPU by its model from
the one price table, the dashboard through the controller's ``guardian_price_per_gpu_hour``
(made here by the controller's own collector), on one history in a real Prometheus.

Two hours, one sample a minute from the range's first minute on (so that the dashboard's
subquery, whose range includes its start, and the report's, whose does not, count the same
points): an idle A100 (2 h x 2.5), an H100 idle for the first hour only (1 h x 4), a Tesla T4
priced by the table's default (2 h x 1), a busy A100 and an idle GPU no pod holds (neither
counted): 5 + 4 + 2 = 11. The dashboard's own default (9) is for models the controller does
not price, so a wrong join would show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.price_metrics import PriceCollector
from guardian.app.report.gpu_hours import ReportOptions, UsageReport
from guardian.app.settings.config_file import load_settings
from guardian.engine.report.chargeback import total
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from tests.integration.deploy.test_dashboard_queries import substitute
from tests.unit.deploy.dashboard import dashboard, queries

SINCE = 1_700_006_400  # a UTC midnight, a multiple of the minute
HOURS = 2
UNTIL = SINCE + HOURS * 3600
NODE = {"node": "gpu-node-1"}
# uuid -> (model, pod holding it and its group or None, utilization by minute)
GPUS = {
    "GPU-a": ("NVIDIA A100-SXM4-80GB", ("idle-a", "team-a"), lambda m: 0.0),
    "GPU-h": ("NVIDIA H100 80GB HBM3", ("half-h", "team-b"), lambda m: 0.0 if m <= 60 else 0.7),
    "GPU-t": ("Tesla T4", ("idle-t", "team-b"), lambda m: 0.01),
    "GPU-b": ("NVIDIA A100-SXM4-80GB", ("busy-b", "team-a"), lambda m: 0.9),
    "GPU-f": ("NVIDIA A100-SXM4-80GB", None, lambda m: 0.0),
}
CONFIG = """\
prometheus: {{url: "{url}"}}
rule_files: [rules.yaml]
prices: {{per_model: {{A100: 2.5, H100: 4.0}}, default: 1.0}}
"""


def price_samples(settings_prices: Any, t: float) -> list[Sample]:
    """What the controller's /metrics serves: its collector, with the models it read."""
    models = {model for model, _, _ in GPUS.values()}
    answer = QueryResult(tuple(PromSample(LabelSet({"model": m}), 1.0) for m in models))
    collector = PriceCollector(lambda: settings_prices, lambda _e, _t: answer, lambda: t)
    (family,) = collector.collect()
    job = {"job": "gpu-guardian-controller"}
    return [Sample(family.name, {**job, **s.labels}, t, s.value) for s in family.samples]


def history(settings_prices: Any) -> list[Sample]:
    out: list[Sample] = []
    for minute in range(1, HOURS * 60 + 1):
        t = SINCE + minute * 60
        for index, (uuid, (model, holder, util)) in enumerate(GPUS.items()):
            gpu = {**NODE, "gpu": str(index), "uuid": uuid}
            info = {**gpu, "model": model, "driver_version": "550", "mig": "disabled"}
            out += [
                Sample("guardian_gpu_info", info, t, 1.0),
                Sample("guardian_gpu_utilization_ratio", gpu, t, util(minute)),
            ]
            if holder is not None:
                pod, group = holder
                alloc = {**gpu, "namespace": "ml", "pod": pod, "container": "main"}
                alloc |= {"gpu_group": group, "resource": "nvidia.com/gpu"}
                out.append(Sample("guardian_pod_gpu_allocated", alloc, t, 1.0))
        out += price_samples(settings_prices, t)
    return out


def query(url: str, expr: str) -> list[dict[str, Any]]:
    response = requests.get(
        f"{url}/api/v1/query", params={"query": expr, "time": UNTIL}, timeout=30
    )
    body = response.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.mark.e2e
def test_dashboard_idle_cost_equals_the_report(prometheus: Any, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text("groups: []\n", encoding="utf-8")
    path = tmp_path / "guardian.yaml"
    path.write_text(CONFIG.format(url="http://unused"), encoding="utf-8")
    prices = load_settings(path, {}).prices.table()
    url: str = prometheus(openmetrics=render_openmetrics(history(prices))).url
    path.write_text(CONFIG.format(url=url), encoding="utf-8")
    settings = load_settings(path, {})

    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(url, timeout=60)))
    try:
        options = ReportOptions(SINCE, UNTIL, resolution=60.0, metrics="guardian")
        report = UsageReport(settings, options, querier).run()
    finally:
        querier.close()
    summary = total(report.rows, report.days)
    report_cost = summary.idle_cost

    (title,) = {t for t, _ in queries(dashboard()) if t.startswith("Idle GPU-hours")}
    hours_expr, cost_expr = [e for t, e in queries(dashboard()) if t == title]
    variables = {"__range": f"{HOURS}h", "price_per_gpu_hour": "9"}
    cost = {
        r["metric"].get("gpu_group", ""): float(r["value"][1])
        for r in query(url, substitute(cost_expr, variables))
    }
    hours = sum(float(r["value"][1]) for r in query(url, substitute(hours_expr, variables)))

    assert report_cost == pytest.approx(11.0)
    assert sum(cost.values()) == pytest.approx(report_cost)
    assert cost == pytest.approx({"team-a": 5.0, "team-b": 6.0})
    assert hours == pytest.approx(summary.idle) == pytest.approx(5.0)
