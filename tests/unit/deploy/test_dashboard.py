"""The Grafana dashboards: well-formed, wired to a Prometheus variable, and every query
names only metrics that our exporter and controller export (or Prometheus makes); the
dcgm-exporter variant reads dcgm-exporter's default counters instead of our exporter's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from .dashboard import (
    DASHBOARD,
    DASHBOARDS,
    DCGM_DASHBOARD,
    DCGM_SERIES,
    PROMETHEUS_SERIES,
    REPO,
    dashboard,
    exported_metrics,
    metric_names,
    panels,
    queries,
)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_well_formed(path: Path) -> None:
    data = dashboard(path)
    assert data["uid"] == path.stem
    assert data["title"]
    assert isinstance(data["schemaVersion"], int)
    ids = [p["id"] for p in panels(data)]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert float(variables["price_per_gpu_hour"]["query"]) > 0
    for panel in panels(data):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].count("(") == target["expr"].count(")"), panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_covers_what_the_issue_asks_for(path: Path) -> None:
    data = dashboard(path)
    exprs = " ".join(e for _, e in queries(data))
    titles = " ".join(p["title"] for p in panels(data)).lower()
    for needed in ("utilization by gpu_group", "memory used by gpu_group", "allocated vs used"):
        assert needed in titles
    assert "idle gpu-hours" in titles
    assert "$price_per_gpu_hour" in exprs  # the chargeback cost, for models without a price
    assert "guardian_price_per_gpu_hour" in exprs  # ... priced per model by the controller
    assert "guardian_class" in exprs  # active alerts of our rule packs
    assert "guardian_remediation_steps_total" in exprs  # reclaim actions
    classes = {v["name"]: v for v in data["templating"]["list"]}["guardian_class"]["query"]
    assert set(classes.split(",")) == {
        "reclaimable",
        "rightsize",
        "pipeline",
        "violation",
        "coverage",
    }
    if path == DCGM_DASHBOARD:
        # Our exporter's metrics are absent in dcgm-exporter mode; the controller's stay.
        assert not re.search(r"guardian_(gpu|pod|exporter)_", exprs)
        assert 'up{cluster=~"$cluster", job=~".*dcgm-exporter.*"}' in exprs
        assert "GPUs in use without a pod" in {p["title"] for p in panels(data)}
        return
    for health in ("guardian_exporter_nvml_up", "guardian_exporter_kube_up"):
        assert health in exprs
    assert "guardian_exporter_last_success_timestamp_seconds" in exprs
    assert "guardian_pod_gpu_unallocated_use" in exprs  # the unallocated-use panel


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_waste_counts_idle_gpus_only_not_memory_advice(path: Path) -> None:
    # GpuMemoryUnderutilized is right-sizing advice (guardian_class rightsize): it is
    # listed among the active alerts, never counted as waste.
    data = dashboard(path)
    (waste,) = [p for p in panels(data) if p["title"] == "Firing waste alerts"]
    (target,) = waste["targets"]
    assert 'guardian_class="reclaimable"' in target["expr"]
    for title, expr in queries(data):
        assert "rightsize" not in expr, title


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_names_only_metrics_we_export(path: Path) -> None:
    exported = exported_metrics()
    assert "guardian_gpu_utilization_ratio" in exported  # the scan finds the renderer's table
    assert "guardian_remediation_steps_total" in exported  # ... and prometheus_client metrics
    if path == DCGM_DASHBOARD:  # dcgm-exporter replaces our exporter, the controller stays
        exported = {n for n in exported if not n.startswith("guardian_exporter")}
        exported = {n for n in exported if not n.startswith(("guardian_gpu_", "guardian_pod_"))}
        exported |= DCGM_SERIES
    unknown = {
        (title, name)
        for title, expr in queries(dashboard(path))
        for name in metric_names(expr)
        if name not in exported and name not in PROMETHEUS_SERIES
    }
    assert not unknown, f"queries name metrics nobody exports: {sorted(unknown)}"


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (gpu_group) (rate(guardian_x_total{a="b(c)"}[5m]))', {"guardian_x_total"}),
        ("a / on (node) group_left (gpu_group) b", {"a", "b"}),
        ('count(ALERTS{alertstate="firing"}) or vector(0)', {"ALERTS"}),
        ("max_over_time(foo[$__range:1m]) * $price_per_gpu_hour", {"foo"}),
        ("time() - max by (node) (bar) > bool 5", {"bar"}),
    ],
)
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_dashboard_ships_as_a_sidecar_configmap() -> None:
    kustomization = yaml.safe_load((DASHBOARD.parent / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == [DASHBOARD.name]
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}
    base = yaml.safe_load((REPO / "manifests" / "base" / "kustomization.yaml").read_text())
    assert "../grafana" in base["resources"]


def test_the_dcgm_overlay_ships_the_dcgm_dashboard_in_place_of_ours() -> None:
    overlay = REPO / "manifests" / "overlays" / "dcgm-exporter"
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    (generator,) = [
        g for g in kustomization["configMapGenerator"] if g["name"] == "gpu-guardian-dashboard"
    ]
    assert generator["behavior"] == "replace"
    assert generator["files"] == [f"grafana/{DCGM_DASHBOARD.name}"]
    # generate.py keeps the overlay's copy identical (kustomize reads only below it).
    copy = overlay / "grafana" / DCGM_DASHBOARD.name
    assert copy.read_text(encoding="utf-8") == DCGM_DASHBOARD.read_text(encoding="utf-8")
    # The same labels, so the Grafana sidecar loads it the same way.
    ours = yaml.safe_load((DASHBOARD.parent / "kustomization.yaml").read_text())
    assert generator["options"] == ours["configMapGenerator"][0]["options"]
