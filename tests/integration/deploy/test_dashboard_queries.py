"""Every dashboard query runs on a real Prometheus, and the chargeback numbers are right
on a fleet whose idle time is known."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests

from guardian.sim.openmetrics import Sample, render_openmetrics
from tests.unit.deploy.dashboard import dashboard, queries

T0 = 1_700_000_000
HOUR = 3600
NODE = {"node": "gpu-node-1"}
VARIABLES = {
    "cluster": ".*",
    "gpu_group": ".*",
    "guardian_class": ".+",
    "price_per_gpu_hour": "2.5",
    "__range": "1h",
    "__rate_interval": "5m",
}


ERROR = {"op": "power_usage", "kind": "not_supported"}
REQUEST = {"op": "post", "result": "ok"}
STEP = {"policy": "p", "step": "notify", "outcome": "dry_run"}
ALERT = {"alertname": "GpuIdle", "alertstate": "firing", "guardian_class": "reclaimable"}


def fleet() -> list[Sample]:
    """An hour, one sample a minute: team-a's GPU busy, team-b's GPU idle, one GPU free."""
    out: list[Sample] = []
    gpus = {"GPU-a": 0.9, "GPU-b": 0.0, "GPU-c": 0.0}
    holders = {"GPU-a": ("train-1", "team-a"), "GPU-b": ("notebook-1", "team-b")}
    for minute in range(61):
        t = T0 + minute * 60
        for index, (uuid, util) in enumerate(gpus.items()):
            gpu = {**NODE, "gpu": str(index), "uuid": uuid}
            info = {**gpu, "model": "NVIDIA A100", "driver_version": "550", "mig": "disabled"}
            out += [
                Sample("guardian_gpu_info", info, t, 1.0),
                Sample("guardian_gpu_utilization_ratio", gpu, t, util),
                Sample("guardian_gpu_memory_total_bytes", gpu, t, 80e9),
            ]
            if uuid in holders:
                pod, group = holders[uuid]
                series = {
                    **gpu,
                    "namespace": "ml",
                    "pod": pod,
                    "container": "main",
                    "gpu_group": group,
                }
                out += [
                    Sample(
                        "guardian_pod_gpu_allocated",
                        {**series, "resource": "nvidia.com/gpu"},
                        t,
                        1.0,
                    ),
                    Sample("guardian_pod_gpu_memory_used_bytes", series, t, 4e9),
                    Sample("guardian_pod_gpu_sm_utilization_ratio", series, t, util),
                    Sample("guardian_pod_vgpu_memory_allocated_bytes", series, t, 80e9),
                ]
        out += [
            Sample("guardian_exporter_nvml_up", NODE, t, 1.0),
            Sample("guardian_exporter_kube_up", NODE, t, 1.0),
            Sample("guardian_exporter_last_success_timestamp_seconds", NODE, t, float(t)),
            Sample("guardian_exporter_snapshot_stale", NODE, t, 0.0),
            Sample("guardian_exporter_errors_total", {**NODE, **ERROR}, t, 1.0),
            Sample("guardian_remediation_steps_total", STEP, t, float(minute // 30)),
            Sample("guardian_remediation_waiting_workloads", {}, t, 0.0),
            Sample("guardian_remediation_api_forbidden_total", {}, t, 0.0),
            Sample("guardian_remediation_conflicts_total", {}, t, 0.0),
            Sample("guardian_rule_evaluation_failures_total", {"group": "g", "rule": "r"}, t, 0.0),
            Sample("guardian_rule_group_last_duration_seconds", {"group": "g"}, t, 0.1),
            Sample("guardian_prometheus_queries_total", {"outcome": "ok"}, t, float(minute)),
            Sample("guardian_slack_outbox_depth", {"channel": "C1"}, t, 0.0),
            Sample("guardian_slack_requests_total", REQUEST, t, float(minute)),
            Sample("guardian_slack_dead_letters_total", {}, t, 0.0),
            Sample("ALERTS", ALERT, t, 1.0),
        ]  # fmt: skip
    return out


def substitute(expr: str) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: VARIABLES[m.group(1)], expr)


def query(url: str, expr: str) -> list[dict[str, Any]]:
    response = requests.get(
        f"{url}/api/v1/query", params={"query": expr, "time": T0 + HOUR}, timeout=30
    )
    body = response.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.fixture
def prom_url(prometheus: Any) -> str:
    url: str = prometheus(openmetrics=render_openmetrics(fleet())).url
    return url


@pytest.mark.e2e
def test_every_query_runs_and_finds_data(prom_url: str) -> None:
    empty = []
    for title, expr in queries(dashboard()):
        if not query(prom_url, substitute(expr)):
            empty.append((title, expr))
    # The fleet has no 403s or conflicts, so those sums are 0, not empty; nothing may be empty.
    assert not empty, empty


def _by_group(result: list[dict[str, Any]]) -> dict[str, float]:
    return {r["metric"].get("gpu_group", ""): float(r["value"][1]) for r in result}


@pytest.mark.e2e
def test_chargeback_counts_idle_allocated_gpu_hours_by_group(prom_url: str) -> None:
    panel = {t: e for t, e in queries(dashboard()) if t.startswith("Idle GPU-hours")}
    (title,) = panel
    exprs = [e for t, e in queries(dashboard()) if t == title]
    hours = _by_group(query(prom_url, substitute(exprs[0])))
    cost = _by_group(query(prom_url, substitute(exprs[1])))
    # team-b's notebook held an idle GPU all hour; team-a's GPU was busy; GPU-c is free.
    assert set(hours) == {"team-b"}
    assert hours["team-b"] == pytest.approx(1.0, abs=1 / 60)
    assert cost["team-b"] == pytest.approx(hours["team-b"] * 2.5)


@pytest.mark.e2e
def test_allocated_versus_used(prom_url: str) -> None:
    exprs = [e for t, e in queries(dashboard()) if t == "Allocated vs used GPUs by gpu_group"]
    allocated = _by_group(query(prom_url, substitute(exprs[0])))
    used = _by_group(query(prom_url, substitute(exprs[1])))
    assert allocated == {"team-a": 1.0, "team-b": 1.0}
    assert used == {"team-a": 1.0}
