"""The PromQL parser and printer against promtool and Prometheus 2.42 themselves.

For each expression of ``tests/fixtures/promql/printed.yaml``, ``promtool check rules``
decides whether a rule with it loads, and a Prometheus loaded with the valid ones says,
in ``/api/v1/rules``, the query it evaluates. Both must agree with the fixture (so the
fast unit tests compare against the truth) and with the engine. The shipped rule packs
are checked the same way.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.engine.promql import PromQLError, printed
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "promql" / "printed.yaml"
PACKS = [
    p
    for d in ("guardian", "dcgm", "parity/rules")
    for p in sorted((REPO / "rules" / d).glob("*.yaml"))
]


def _rule_file(path: Path, index: int, expr: str) -> Path:
    group = {"name": f"g{index}", "rules": [{"record": "r", "expr": expr}]}
    path.write_text(json.dumps({"groups": [group]}), encoding="utf-8")
    return path


def _promtool_refuses(files: list[Path]) -> set[Path]:
    promtool = PrometheusBinaries.find().promtool
    result = subprocess.run(
        [promtool, "check", "rules", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return {f for f in files if f"{f}: " in result.stderr}


def _queries(prometheus: PrometheusFactory, files: list[Path]) -> dict[str, str]:
    """Group name -> the query of its first rule, as the running server reports it."""
    prom = prometheus(rule_files=files)
    with urllib.request.urlopen(f"{prom.url}/api/v1/rules", timeout=30) as response:  # noqa: S310
        groups: list[dict[str, Any]] = json.load(response)["data"]["groups"]
    return {g["name"]: g["rules"][0]["query"] for g in groups}


@pytest.mark.timeout(300)
def test_fixture_engine_and_prometheus_agree(tmp_path: Path, prometheus: PrometheusFactory) -> None:
    cases: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    files = [_rule_file(tmp_path / f"e{i}.yaml", i, c["expr"]) for i, c in enumerate(cases)]
    refused = _promtool_refuses(files)
    queries = _queries(prometheus, [f for f in files if f not in refused])

    for index, (case, path) in enumerate(zip(cases, files, strict=True)):
        where = repr(case["expr"])
        assert (path in refused) == ("error" in case), f"fixture verdict is stale for {where}"
        if "error" in case:
            with pytest.raises(PromQLError):
                printed(case["expr"])
            continue
        assert queries[f"g{index}"] == case["printed"], f"fixture print is stale for {where}"
        assert printed(case["expr"]) == case["printed"], where


@pytest.mark.timeout(120)
def test_shipped_rules_are_queried_as_prometheus_prints_them(
    prometheus: PrometheusFactory,
) -> None:
    prom = prometheus(rule_files=PACKS)
    with urllib.request.urlopen(f"{prom.url}/api/v1/rules", timeout=30) as response:  # noqa: S310
        groups: list[dict[str, Any]] = json.load(response)["data"]["groups"]
    written = {
        group["name"]: [rule["expr"] for rule in group["rules"]]
        for path in PACKS
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    }
    queries = {g["name"]: [r["query"] for r in g["rules"]] for g in groups}

    assert queries.keys() == written.keys()
    for name, exprs in written.items():
        assert [printed(e) for e in exprs] == queries[name], name
    assert sum(map(len, written.values())) > 20
