"""Every query of both dashboards runs on a real Prometheus and finds data, and the
chargeback numbers are right on a fleet whose idle time is known: GPU Guardian's exporter's
series for gpu-guardian.json, dcgm-exporter's for gpu-guardian-dcgm.json."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests

from guardian.adapters.openmetrics import Sample, render_openmetrics
from tests.unit.deploy.dashboard import DCGM_DASHBOARD, dashboard, queries

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


def _shared_and_unallocated(t: float) -> list[Sample]:
    """team-c's GPU-d, time-sliced: serve-1 busy, notebook-2 idle on its half; and rogue-1,
    which runs on GPU-a without requesting it."""
    gpu = {**NODE, "gpu": "3", "uuid": "GPU-d"}
    info = {**gpu, "model": "NVIDIA A100", "driver_version": "550", "mig": "disabled"}
    out = [
        Sample("guardian_gpu_info", info, t, 1.0),
        Sample("guardian_gpu_utilization_ratio", gpu, t, 0.6),
        Sample("guardian_gpu_memory_total_bytes", gpu, t, 80e9),
    ]
    for pod, util in (("serve-1", 0.6), ("notebook-2", 0.0)):
        series = {**gpu, "namespace": "ml", "pod": pod, "container": "main", "gpu_group": "team-c"}
        alloc = {**series, "resource": "nvidia.com/gpu"}
        proc = {**series, "pod_uid": f"uid-{pod}", "container_id": f"c-{pod}"}
        out += [
            Sample("guardian_pod_gpu_allocated", alloc, t, 1.0),
            Sample("guardian_pod_gpu_sm_utilization_ratio", proc, t, util),
        ]
    rogue = {
        **NODE,
        "gpu": "0",
        "uuid": "GPU-a",
        "pod_uid": "uid-rogue",
        "container": "main",
        "container_id": "c-rogue",
        "namespace": "ml",
        "pod": "rogue-1",
        "gpu_group": "team-c",
    }
    return [*out, Sample("guardian_pod_gpu_unallocated_use", rogue, t, 1.0)]


def fleet() -> list[Sample]:
    """An hour, one sample a minute: team-a's GPU busy, team-b's GPU idle, one GPU free;
    team-c shares a GPU between a busy and an idle pod, and one of its pods uses team-a's
    GPU without a request."""
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
        out += _shared_and_unallocated(t)
    return out


def substitute(expr: str, variables: dict[str, str] | None = None) -> str:
    """Grafana's substitution: a name that is no variable (label_replace's ``$1``) stays."""
    values = {**VARIABLES, **(variables or {})}
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), m.group(0)), expr)


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
    assert allocated == {"team-a": 1.0, "team-b": 1.0, "team-c": 2.0}
    # Device-level: both pods on team-c's busy shared GPU count as in use.
    assert used == {"team-a": 1.0, "team-c": 2.0}


@pytest.mark.e2e
def test_unallocated_use_and_idle_shares(prom_url: str) -> None:
    (unallocated,) = [e for t, e in queries(dashboard()) if t.startswith("GPU use without")]
    (row,) = query(prom_url, substitute(unallocated))
    assert (row["metric"]["pod"], row["metric"]["uuid"]) == ("rogue-1", "GPU-a")
    assert "container_id" not in row["metric"]  # one row per container, across restarts
    (shares,) = [e for t, e in queries(dashboard()) if t.startswith("Idle pods on shared")]
    assert _by_group(query(prom_url, substitute(shares))) == {"team-c": 1.0}


# ------------------------------------------------------------------ the dcgm-exporter variant
DCGM_NODE = {"job": "dcgm-exporter", "instance": "10.0.0.7:9400", "Hostname": "gpu-node-1"}


def dcgm_fleet() -> list[Sample]:
    """An hour as dcgm-exporter reports it (MiB, percent): team-a's GPU busy, team-b's idle,
    a MIG instance of team-b without profiling fields, a free GPU used by a host process."""
    out: list[Sample] = []
    model = {"modelName": "NVIDIA A100-SXM4-80GB"}
    pods = {
        "GPU-a": ({"namespace": "ml", "pod": "train-1", "gpu_group": "team-a"}, 90.0, 0.9),
        "GPU-b": ({"namespace": "ml", "pod": "notebook-1", "gpu_group": "team-b"}, 0.0, 0.0),
        "GPU-c": ({}, 0.0, 0.0),
    }
    for minute in range(61):
        t = T0 + minute * 60
        for index, (uuid, (holder, util, active)) in enumerate(pods.items()):
            gpu = {**DCGM_NODE, **model, "gpu": str(index), "UUID": uuid, **holder}
            used = 4000.0 if holder or uuid == "GPU-c" else 0.0  # GPU-c: a host process
            out += [
                Sample("DCGM_FI_DEV_GPU_UTIL", gpu, t, util),
                Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu, t, active),
                Sample("DCGM_FI_DEV_FB_USED", gpu, t, used),
                Sample("DCGM_FI_DEV_FB_FREE", gpu, t, 80000.0 - used),
                Sample("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu, t, 1e6 + minute * 6e6),
                Sample("DCGM_FI_DEV_XID_ERRORS", gpu, t, 0.0),
            ]
        mig = {
            **DCGM_NODE,
            **model,
            "gpu": "3",
            "UUID": "GPU-m",
            "GPU_I_ID": "1",
            "GPU_I_PROFILE": "1g.10gb",
            "namespace": "ml",
            "pod": "small-1",
            "gpu_group": "team-b",
        }
        out += [
            Sample("DCGM_FI_DEV_FB_USED", mig, t, 2000.0),
            Sample("DCGM_FI_DEV_FB_FREE", mig, t, 8000.0),
            Sample("up", {"job": "dcgm-exporter", "instance": "10.0.0.7:9400"}, t, 1.0),
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


@pytest.fixture
def dcgm_url(prometheus: Any) -> str:
    url: str = prometheus(openmetrics=render_openmetrics(dcgm_fleet())).url
    return url


@pytest.mark.e2e
def test_every_dcgm_query_runs_and_finds_data(dcgm_url: str) -> None:
    empty = [
        (title, expr)
        for title, expr in queries(dashboard(DCGM_DASHBOARD))
        if not query(dcgm_url, substitute(expr))
    ]
    assert not empty, empty


@pytest.mark.e2e
def test_dcgm_chargeback_and_blind_spots(dcgm_url: str) -> None:
    exprs = {
        t: [e for t2, e in queries(dashboard(DCGM_DASHBOARD)) if t2 == t]
        for t, _ in queries(dashboard(DCGM_DASHBOARD))
    }
    (title,) = [t for t in exprs if t.startswith("Idle GPU-hours")]
    hours = _by_group(query(dcgm_url, substitute(exprs[title][0])))
    # team-b's notebook idled all hour; its MIG instance has no activity field, so it is
    # not counted idle (GpuActivityUnknown says so); team-a was busy; GPU-c is no one's.
    assert set(hours) == {"team-b"}
    assert hours["team-b"] == pytest.approx(1.0, abs=1 / 60)
    allocated = _by_group(
        query(dcgm_url, substitute(exprs["Allocated vs used GPUs by gpu_group"][0]))
    )
    assert allocated == {"team-a": 1.0, "team-b": 2.0}
    (without_pod,) = query(dcgm_url, substitute(exprs["GPUs in use without a pod"][0]))
    assert without_pod["metric"]["UUID"] == "GPU-c"
    unjudged = exprs["Allocated GPUs whose idleness cannot be judged"]
    assert _by_group(query(dcgm_url, substitute(unjudged[0]))) == {"team-b": 1.0}
