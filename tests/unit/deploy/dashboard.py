"""The Grafana dashboards' queries, and the metric names our code (or dcgm-exporter) exports.

Two dashboards ship: ``gpu-guardian.json`` for GPU Guardian's exporter (manifests/grafana,
in the base) and ``gpu-guardian-dcgm.json``, the same views from dcgm-exporter's metrics,
which the dcgm-exporter overlay puts in the dashboard ConfigMap instead.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "manifests" / "grafana" / "gpu-guardian.json"
DCGM_DASHBOARD = REPO / "manifests" / "grafana" / "gpu-guardian-dcgm.json"
DASHBOARDS = (DASHBOARD, DCGM_DASHBOARD)
# Where metrics are defined: the exporter's renderer and collectors, the controller's
# engine, remediation and notifier metrics.
METRIC_SOURCES = ("exporter", "guardian/app", "guardian/adapters")
# Series Prometheus itself makes, which the dashboard may use.
PROMETHEUS_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE", "up"})
# dcgm-exporter's default counters (etc/default-counters.csv): what the dcgm variant may use.
DCGM_SERIES = frozenset(
    {
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
    }
)
# What prometheus_client appends to a family's name.
SUFFIXES = ("", "_total", "_created", "_bucket", "_sum", "_count", "_info")

_METRIC = re.compile(r"^guardian_[a-z0-9_]+$")
_KEYWORDS = frozenset(
    [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "and",
        "or",
        "unless",
        "sum",
        "avg",
        "min",
        "max",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
        "group",
        "inf",
        "nan",
    ]
)


def dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def panels(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in data["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, expr) for every query."""
    for panel in panels(data):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text
    )  # label lists
    text = re.sub(r"\$\{?\w+\}?", " ", text)  # dashboard variables
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?", text):
        word = match.group(0).rstrip("( ")
        if match.group(1) or word in _KEYWORDS:
            continue  # a function call or a keyword
        names.add(word)
    return names


def _defined(tree: ast.AST) -> Iterator[str]:
    """String constants that name a metric: the first argument of a call (Counter(...),
    GaugeMetricFamily(...)) or the first item of a tuple (the renderer's tables)."""
    for node in ast.walk(tree):
        first: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
        elif isinstance(node, ast.Tuple) and node.elts:
            first = node.elts[0]
        if (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and _METRIC.match(first.value)
        ):
            yield first.value


def exported_metrics() -> set[str]:
    names: set[str] = set()
    for source in METRIC_SOURCES:
        for path in sorted((REPO / source).rglob("*.py")):
            names.update(_defined(ast.parse(path.read_text(encoding="utf-8"))))
    return {name + suffix for name in names for suffix in SUFFIXES}
