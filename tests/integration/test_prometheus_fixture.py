"""The real-Prometheus fixture: backfill, exact queries, rules, and cleanup."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guardian.adapters.local_prometheus import (
    BackfillError,
    LocalPrometheus,
    PrometheusBinaries,
    PrometheusNotInstalledError,
    PrometheusOptions,
    PrometheusStartError,
    start_prometheus,
)
from guardian.adapters.openmetrics import Sample, render_openmetrics
from tests.helpers import pid_alive, prom_get
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z: backfilled history far from "now"
REPO_ROOT = Path(__file__).resolve().parents[2]


def _utilization_series() -> str:
    samples = [
        Sample("gpu_util", {"uuid": "GPU-a", "node": "n1"}, T0 + 60 * i, 0.125 * i)
        for i in range(11)
    ]
    samples += [
        Sample("gpu_util", {"uuid": "GPU-b", "node": "n1"}, T0 + 60 * i, 1234567.0)
        for i in range(11)
    ]
    return render_openmetrics(samples)


def test_backfilled_value_comes_back_exactly_at_fixed_time(prometheus: PrometheusFactory) -> None:
    prom = prometheus(openmetrics=_utilization_series())

    data = prom_get(prom.url, "/api/v1/query", query="gpu_util", time=str(T0 + 300))

    values = {r["metric"]["uuid"]: r["value"] for r in data["result"]}
    assert values == {"GPU-a": [T0 + 300, "0.625"], "GPU-b": [T0 + 300, "1234567"]}


def test_lookback_and_range_functions_see_backfilled_history(
    prometheus: PrometheusFactory,
) -> None:
    prom = prometheus(openmetrics=_utilization_series())

    # 30 s after a sample, the instant query still returns that sample.
    after = prom_get(prom.url, "/api/v1/query", query='gpu_util{uuid="GPU-a"}', time=str(T0 + 330))
    peak = prom_get(
        prom.url,
        "/api/v1/query",
        query='max_over_time(gpu_util{uuid="GPU-a"}[10m])',
        time=str(T0 + 600),
    )

    assert after["result"][0]["value"][1] == "0.625"
    assert peak["result"][0]["value"][1] == "1.25"


def test_loaded_rule_group_is_listed(prometheus: PrometheusFactory, tmp_path: Path) -> None:
    rule_file = tmp_path / "smoke.rules.yaml"
    rule_file.write_text(
        textwrap.dedent(
            """\
            groups:
              - name: fixture-smoke
                interval: 30s
                rules:
                  - alert: FixtureAlwaysFires
                    expr: vector(1)
                    for: 5m
                    labels: {severity: info}
            """
        )
    )
    prom = prometheus(rule_files=[rule_file])

    groups = prom_get(prom.url, "/api/v1/rules")["groups"]

    assert [(g["name"], g["interval"]) for g in groups] == [("fixture-smoke", 30)]
    assert [r["name"] for r in groups[0]["rules"]] == ["FixtureAlwaysFires"]


def test_handle_exposes_url_data_dir_and_stop(prometheus: PrometheusFactory) -> None:
    prom = prometheus()

    assert prom.url == f"http://127.0.0.1:{prom.port}"
    assert prom.data_dir.is_dir()
    assert prom.is_running()
    prom.stop()
    assert not pid_alive(prom.pid)
    prom.stop()  # idempotent


def test_context_manager_stops_on_exception(
    prometheus_binaries: PrometheusBinaries, tmp_path: Path
) -> None:
    started: list[LocalPrometheus] = []

    def run() -> None:
        with start_prometheus(tmp_path, binaries=prometheus_binaries) as prom:
            started.append(prom)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run()

    assert started
    assert not pid_alive(started[0].pid)


def test_invalid_rule_file_fails_clearly_and_leaves_nothing(
    prometheus_binaries: PrometheusBinaries, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.rules.yaml"
    bad.write_text("groups:\n  - name: g\n    rules:\n      - alert: X\n        expr: 'sum(('\n")

    with pytest.raises(PrometheusStartError, match=r"exited with") as info:
        start_prometheus(
            tmp_path / "prom", PrometheusOptions(rule_files=[bad]), binaries=prometheus_binaries
        )

    assert "bad.rules.yaml" in str(info.value)


def test_bad_openmetrics_is_a_backfill_error(
    prometheus_binaries: PrometheusBinaries, tmp_path: Path
) -> None:
    with pytest.raises(BackfillError, match="could not backfill"):
        start_prometheus(
            tmp_path,
            PrometheusOptions(openmetrics="not openmetrics at all {\n# EOF\n"),
            binaries=prometheus_binaries,
        )


def test_missing_binaries_are_named() -> None:
    with pytest.raises(PrometheusNotInstalledError, match="prometheus and promtool not found"):
        PrometheusBinaries.find(search_path="/nonexistent")


def test_failing_test_in_another_session_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(
        textwrap.dedent(
            f"""\
            from pathlib import Path

            def test_fails_while_prometheus_runs(prometheus):
                prom = prometheus()
                Path({str(pid_file)!r}).write_text(str(prom.pid))
                assert False, "deliberate failure"
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.plugins.prometheus_fixture",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-q",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert "deliberate failure" in result.stdout
    pid = int(pid_file.read_text())
    assert not pid_alive(pid)
