"""``guardian report`` over three weeks of backfilled history, against hand-computed hours.

The range starts 6 hours into the first day and ends 12 hours into the last, so the
first and last days are partial (instant queries) and the 19 between are whole (range
queries, a chunk of 4 days at a time). A point every 5 minutes counts 5 minutes.

- team-a: ``ml/train-…`` holds an A100 (€2.50/h), 50 % busy for days 0-6, then 1 %:
  allocated 18 + 6x24 + 13x24 + 12 = 486 GPU-h, used 9 + 72 + 13x0.24 + 0.12 = 84.24,
  idle 13x24 + 12 = 324; cost €1215, idle cost €810.
- team-b: ``research/notebook-0`` holds an H100 (€4/h), never busy: 486 GPU-h allocated
  and idle, none used; €1944 both. The third GPU is free: in no row.
- team-c: ``serve/web-…``, two replicas on A100s; one never busy, the other 90 % busy for
  days 0-9 (18 + 9x24 = 234 h), then idle: allocated 972, used 0.9 x 234 = 210.6, idle
  486 + 252 = 738, of which 234 (the idle replica's while the other was busy) in a
  partly idle workload and 504 in a fully idle one; cost €2430, idle cost €1845.

team-a and team-b are one-GPU workloads: all their idle hours are in fully idle ones.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.report.gpu_hours import ReportOptions, UsageReport
from guardian.app.settings.config_file import load_settings
from guardian.engine.report.chargeback import summarize, total
from guardian.model.http_client import HttpClientConfig
from tests.integration.report.conftest import config
from tests.integration.simulate.fleet import T0

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SINCE, UNTIL = T0 + 6 * 3600, T0 + 20 * 86400 + 12 * 3600


def run(url: str, tmp_path: Path, metrics: str = "auto"):
    settings = load_settings(config(tmp_path / "guardian.yaml", url), {})
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(url, timeout=60)))
    options = ReportOptions(SINCE, UNTIL, chunk_seconds=4 * 86400, metrics=metrics)
    try:
        return UsageReport(settings, options, querier).run()
    finally:
        querier.close()


def check_totals(result) -> None:
    groups = {s.key: s for s in summarize(result.rows, "gpu_group", result.days)}
    a, b, c = groups["team-a"], groups["team-b"], groups["team-c"]
    assert (a.allocated, a.used, a.idle) == pytest.approx((486.0, 84.24, 324.0))
    assert (a.idle_fully, a.idle_partly) == pytest.approx((324.0, 0.0))
    assert (a.cost, a.idle_cost) == pytest.approx((1215.0, 810.0))
    assert (b.allocated, b.used, b.idle) == pytest.approx((486.0, 0.0, 486.0))
    assert (b.idle_fully, b.idle_partly) == pytest.approx((486.0, 0.0))
    assert (b.cost, b.idle_cost) == pytest.approx((1944.0, 1944.0))
    assert (c.allocated, c.used, c.idle) == pytest.approx((972.0, 210.6, 738.0))
    assert (c.idle_fully, c.idle_partly) == pytest.approx((504.0, 234.0))
    assert (c.cost, c.idle_cost) == pytest.approx((2430.0, 1845.0))
    assert set(groups) == {"team-a", "team-b", "team-c"}
    assert len(result.days) == 21
    assert result.days[0] == "2023-11-15"
    assert result.days[-1] == "2023-12-05"
    daily = a.daily
    assert daily["2023-11-15"]["allocated"] == pytest.approx(18.0)
    assert daily["2023-11-21"]["idle"] == pytest.approx(0.0)
    assert daily["2023-11-22"]["idle"] == pytest.approx(24.0)
    assert daily["2023-12-05"]["idle"] == pytest.approx(12.0)
    served = c.daily
    assert (served["2023-11-24"]["idle_fully"], served["2023-11-24"]["idle_partly"]) == (
        pytest.approx(0.0),
        pytest.approx(24.0),
    )
    assert (served["2023-11-25"]["idle_fully"], served["2023-11-25"]["idle_partly"]) == (
        pytest.approx(48.0),
        pytest.approx(0.0),
    )


def test_gpu_hours_and_cost_per_group_and_day(fleet_prometheus, tmp_path: Path) -> None:
    result = run(fleet_prometheus.url, tmp_path)

    assert result.metrics == "guardian"
    check_totals(result)
    by_workload = {s.key for s in summarize(result.rows, "workload", result.days)}
    assert by_workload == {"Deployment/train", "StatefulSet/notebook", "Deployment/web"}
    by_model = {s.key: s.allocated for s in summarize(result.rows, "model", result.days)}
    assert by_model == pytest.approx(
        {"NVIDIA A100-SXM4-80GB": 1458.0, "NVIDIA H100 80GB HBM3": 486.0}
    )
    everything = total(result.rows, result.days)
    assert everything.cost == pytest.approx(5589.0)
    assert (everything.idle, everything.idle_fully, everything.idle_partly) == pytest.approx(
        (1548.0, 1314.0, 234.0)
    )


def test_dcgm_exporter_metrics_give_the_same_report(dcgm_prometheus, tmp_path: Path) -> None:
    result = run(dcgm_prometheus.url, tmp_path)

    assert result.metrics == "dcgm"
    check_totals(result)


def _cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    cfg = config(tmp_path / "guardian.yaml", url)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "guardian",
            "report",
            "--config",
            str(cfg),
            "--since",
            str(SINCE),
            "--until",
            str(UNTIL),
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_command_prints_a_table_csv_and_json(fleet_prometheus, tmp_path: Path) -> None:
    table = _cli(tmp_path, fleet_prometheus.url, "--progress", "lines")
    assert table.returncode == 0, table.stderr
    assert "team-b" in table.stdout
    assert "€1,944.00" in table.stdout
    assert "2023-11-22" in table.stdout
    assert "report: 3/84" in table.stderr  # plain progress lines: not a terminal

    rows = list(
        csv.DictReader(io.StringIO(_cli(tmp_path, fleet_prometheus.url, "--format", "csv").stdout))
    )
    day7 = [r for r in rows if r["day"] == "2023-11-22" and r["gpu_group"] == "team-a"]
    assert [(r["workload"], float(r["idle_gpu_hours"]), float(r["idle_cost"])) for r in day7] == [
        ("Deployment/train", 24.0, 60.0)
    ]

    data = json.loads(
        _cli(tmp_path, fleet_prometheus.url, "--format", "json", "--by", "namespace").stdout
    )
    assert data["by"] == "namespace"
    assert {g["key"]: g["idle_gpu_hours"] for g in data["groups"]} == pytest.approx(
        {"ml": 324.0, "research": 486.0, "serve": 738.0}
    )
    split = {
        g["key"]: (g["idle_gpu_hours_fully_idle"], g["idle_gpu_hours_partly_idle"])
        for g in data["groups"]
    }
    assert split["serve"] == pytest.approx((504.0, 234.0))
    assert split["ml"] == pytest.approx((324.0, 0.0))


def test_the_table_and_csv_split_idle_hours(fleet_prometheus, tmp_path: Path) -> None:
    table = _cli(tmp_path, fleet_prometheus.url, "--by", "namespace").stdout.splitlines()
    rows = list(
        csv.DictReader(io.StringIO(_cli(tmp_path, fleet_prometheus.url, "--format", "csv").stdout))
    )

    # The headline first, then the summary.
    assert table[2:8] == [
        "idle cost: €4,599.00 of €5,589.00 GPU spend (82.3% of spend idle)",
        "idle GPU-hours: 1,548.0 of 1,944.0 allocated (79.6%)",
        "top idle workloads:",
        (
            "  1. research/StatefulSet/notebook: €1,944.00 idle "
            "(486.0 idle GPU-hours, 100.0% of its GPU-hours)"
        ),
        "  2. serve/Deployment/web: €1,845.00 idle (738.0 idle GPU-hours, 75.9% of its GPU-hours)",
        "  3. ml/Deployment/train: €810.00 idle (324.0 idle GPU-hours, 66.7% of its GPU-hours)",
    ]
    assert "IDLE GPU-h  FULLY IDLE  PARTLY IDLE" in table[9]
    serve = next(line for line in table if line.startswith("serve"))
    assert serve.split()[1:6] == ["972.0", "210.6", "738.0", "504.0", "234.0"]
    day9 = [
        (r["workload"], r["idle_gpu_hours_fully_idle"], r["idle_gpu_hours_partly_idle"])
        for r in rows
        if r["day"] == "2023-11-24"
    ]
    assert day9 == [
        ("Deployment/train", "24.000000", "0.000000"),
        ("StatefulSet/notebook", "24.000000", "0.000000"),
        ("Deployment/web", "0.000000", "24.000000"),
    ]


def test_bad_flags_are_usage_errors(fleet_prometheus, tmp_path: Path) -> None:
    html = _cli(tmp_path, fleet_prometheus.url, "--format", "html")
    assert html.returncode == 2
    assert "needs --output" in html.stderr
    bad = _cli(tmp_path, fleet_prometheus.url, "--until", "yesterday")
    assert bad.returncode == 2
    assert "--until" in bad.stderr
