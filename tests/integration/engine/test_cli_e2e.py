"""`guardian eval`, `guardian run` and `guardian rules check` as real processes against a
real Prometheus."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.local_prometheus import free_loopback_port
from tests.helpers import prom_get, write_configmap_volume
from tests.integration.engine.conftest import T0, openmetrics, series, write_rules

pytestmark = pytest.mark.e2e

GUARDIAN = [sys.executable, "-m", "guardian"]

EVAL_RULES = """\
groups:
  - name: gpus
    rules:
      - alert: GpuIdle
        expr: util < 5
        for: 10m
        labels: {severity: warning}
        annotations: {summary: '{{ $labels.instance }} idle at {{ $value }}%'}
      - alert: GpuBusy
        expr: util > 50
"""


def _config(tmp_path: Path, url: str, rules: Path, **extra: Any) -> Path:
    lines = [
        "prometheus:",
        f"  url: {url}",
        "  timeout: 5s",
        f"rule_files: [{rules}]",
        f"state_path: {tmp_path / 'state.db'}",
    ]
    lines += [f"{key}: {json.dumps(value)}" for key, value in extra.items()]
    path = tmp_path / "guardian.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GUARDIAN, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_eval_prints_json_and_table_and_never_writes_state(prometheus: Any, tmp_path: Path) -> None:
    prom = prometheus(openmetrics=openmetrics(series("util", {"g0": [1.0] * 5, "g1": [90.0] * 5})))
    rules = write_rules(tmp_path / "rules.yaml", EVAL_RULES)
    config = _config(tmp_path, prom.url, rules)

    result = _run("eval", "--config", str(config), "--at", str(int(T0 + 120)), "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (group,) = report["groups"]
    assert report["at"] == "2023-11-14T22:15:20Z"
    assert [r["health"] for r in group["rules"]] == ["ok", "ok"]
    alerts = {a["labels"]["alertname"]: a for a in group["alerts"]}
    assert alerts["GpuIdle"]["state"] == "pending"
    assert alerts["GpuIdle"]["annotations"]["summary"] == "g0 idle at 1%"
    assert alerts["GpuIdle"]["value"] == "1e+00"
    assert alerts["GpuBusy"]["state"] == "firing"
    assert not (tmp_path / "state.db").exists()

    table = _run("eval", "--config", str(config), "--at", "2023-11-14T22:15:20Z")
    assert table.returncode == 0, table.stderr
    assert "GpuIdle" in table.stdout
    assert "pending" in table.stdout
    assert "instance=g0,severity=warning" in table.stdout


def test_eval_reports_failures_and_bad_config(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.yaml", EVAL_RULES)
    config = _config(tmp_path, f"http://127.0.0.1:{free_loopback_port()}", rules)

    down = _run("eval", "--config", str(config), "--at", str(T0))
    assert down.returncode == 1
    assert "gpus/GpuIdle: failed (connection)" in down.stderr

    bad = tmp_path / "bad.yaml"
    bad.write_text(f"prometheus:\n  url: http://x\n  timeot: 5s\nrule_files: [{rules}]\n")
    result = _run("eval", "--config", str(bad))
    assert result.returncode == 2
    assert f"{bad}:3: prometheus.timeot: Extra inputs are not permitted" in result.stderr


def test_rules_check_reports_line_and_field_and_missing_recorded_metric(
    prometheus: Any, tmp_path: Path
) -> None:
    bad = write_rules(
        tmp_path / "bad.yaml",
        "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    for: 5 minutes\n",
    )
    result = _run("rules", "check", str(bad))
    assert result.returncode == 2
    assert f"{bad}:6: groups[0].rules[0].for: not a valid duration string" in result.stdout

    recorded = write_rules(
        tmp_path / "recorded.yaml",
        """\
groups:
- name: g
  rules:
  - record: gpu:util:avg
    expr: avg(util)
  - alert: UsesRecorded
    expr: gpu:util:avg < 5
""",
    )
    prom = prometheus(openmetrics=openmetrics(series("util", {"g0": [1.0]})))
    assert _run("rules", "check", str(recorded)).returncode == 0
    missing = _run("rules", "check", str(recorded), "--prometheus-url", prom.url)
    assert missing.returncode == 1
    assert f"{recorded}:6: alert UsesRecorded uses recorded metric gpu:util:avg" in missing.stdout


RUN_RULES = """\
groups:
  - name: live
    interval: 1s
    rules:
      - alert: Always
        expr: vector(1)
        for: 2s
        labels: {gpu: "0"}
"""


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()
    except OSError:
        return 0, ""


def _wait(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def guardian_run(tmp_path: Path) -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    logs: list[Any] = []

    def start(config: Path) -> subprocess.Popen[str]:
        log = (tmp_path / f"run{len(started)}.log").open("w")
        logs.append(log)
        process = subprocess.Popen(
            [*GUARDIAN, "run", "--config", str(config)], stdout=log, stderr=log, text=True
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    for log in logs:
        log.close()


def _alerts(base: str) -> list[dict[str, Any]]:
    status, body = _get(f"{base}/api/v1/alerts")
    return list(json.loads(body)["data"]["alerts"]) if status == 200 else []


def test_run_serves_alerts_writes_series_reloads_and_stops_on_sigterm(
    prometheus: Any, tmp_path: Path, guardian_run: Any
) -> None:
    prom = prometheus()
    rules = write_rules(tmp_path / "rules.yaml", RUN_RULES)
    port = free_loopback_port()
    config = _config(
        tmp_path,
        prom.url,
        rules,
        listen_address=f"127.0.0.1:{port}",
        remote_write={"url": f"{prom.url}/api/v1/write"},
        external_labels={"cluster": "test"},
    )
    base = f"http://127.0.0.1:{port}"
    process = guardian_run(config)

    _wait(lambda: _get(f"{base}/healthz")[0] == 200, "/healthz")
    _wait(lambda: _get(f"{base}/readyz")[0] == 200, "/readyz")
    _wait(lambda: any(a["state"] == "firing" for a in _alerts(base)), "a firing alert")
    (alert,) = _alerts(base)
    assert alert["labels"] == {"alertname": "Always", "gpu": "0"}
    assert alert["value"] == "1e+00"

    _wait(
        lambda: bool(
            prom_get(prom.url, "/api/v1/query", query='ALERTS{alertstate="firing"}')["result"]
        ),
        "ALERTS written to Prometheus",
    )
    (for_state,) = prom_get(prom.url, "/api/v1/query", query="ALERTS_FOR_STATE")["result"]
    assert for_state["metric"]["alertname"] == "Always"

    metrics = _get(f"{base}/metrics")[1]
    for name in (
        'guardian_rule_group_last_duration_seconds{group="live"}',
        "guardian_rule_group_evaluation_duration_seconds_bucket",
        'guardian_alerts{state="firing"} 1.0',
        'guardian_prometheus_queries_total{outcome="success"}',
        "guardian_prometheus_query_duration_seconds_count",
        'guardian_rule_group_last_evaluation_timestamp_seconds{group="live"}',
    ):
        assert name in metrics, name

    # An invalid config on SIGHUP is refused and the running one kept.
    good = config.read_text()
    config.write_text(good.replace("timeout: 5s", "timeout: soon"))
    process.send_signal(signal.SIGHUP)
    time.sleep(1.5)
    assert process.poll() is None
    assert [a["labels"]["alertname"] for a in _alerts(base)] == ["Always"]

    # A valid one is applied.
    rules.write_text(RUN_RULES.replace("alert: Always", "alert: Renamed"))
    config.write_text(good)
    process.send_signal(signal.SIGHUP)
    _wait(
        lambda: [a["labels"]["alertname"] for a in _alerts(base)] == ["Renamed"],
        "the reloaded rule",
    )

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    log = (tmp_path / "run0.log").read_text()
    assert "keeping the running config" in log
    assert "prometheus.timeout" in log


def test_run_restart_after_kill_keeps_firing_alert(
    prometheus: Any, tmp_path: Path, guardian_run: Any
) -> None:
    prom = prometheus()
    rules = write_rules(tmp_path / "rules.yaml", RUN_RULES)
    port = free_loopback_port()
    config = _config(tmp_path, prom.url, rules, listen_address=f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{port}"

    first = guardian_run(config)
    _wait(lambda: any(a["state"] == "firing" for a in _alerts(base)), "a firing alert")
    active_at = _alerts(base)[0]["activeAt"]
    first.send_signal(signal.SIGKILL)
    first.wait(10)

    second = guardian_run(config)
    _wait(lambda: _get(f"{base}/readyz")[0] == 200, "/readyz after restart")
    (alert,) = _alerts(base)
    assert alert["state"] == "firing"
    assert alert["activeAt"] == active_at
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=15) == 0


def _last_eval_ts(db: Path) -> float | None:
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT last_eval_ts FROM engine_groups").fetchall()
    return float(rows[0][0]) if rows else None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_signal_mid_cycle(
    sig: signal.Signals, prometheus: Any, query_proxy: Any, tmp_path: Path, guardian_run: Any
) -> None:
    """SIGTERM lets the evaluation in flight finish and commit; kill -9 loses only it."""
    prom = prometheus()
    proxy = query_proxy(prom.url)
    rules = write_rules(tmp_path / "rules.yaml", RUN_RULES)
    port = free_loopback_port()
    config = _config(tmp_path, proxy.url, rules, listen_address=f"127.0.0.1:{port}")
    process = guardian_run(config)
    db = tmp_path / "state.db"
    _wait(lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, "/readyz")

    proxy.behaviour.delay_seconds = 3.0
    seen = len(proxy.requests)
    _wait(lambda: len(proxy.requests) > seen, "a slow query in flight")
    in_flight = float(proxy.requests[-1]["time"])
    process.send_signal(sig)
    process.wait(timeout=15)

    committed = _last_eval_ts(db)
    assert committed is not None
    if sig is signal.SIGTERM:
        assert process.returncode == 0
        assert committed == in_flight  # the cycle in flight was finished and stored
    else:
        assert committed < in_flight  # only the cycle in flight is lost


def test_run_reloads_edited_configmap_files_without_a_signal(
    prometheus: Any, tmp_path: Path, guardian_run: Any
) -> None:
    prom = prometheus()
    port = free_loopback_port()
    rules_dir, config_dir = tmp_path / "rules", tmp_path / "config"
    write_configmap_volume(rules_dir, {"live.yaml": RUN_RULES})
    good = "\n".join(
        [
            "prometheus:",
            f"  url: {prom.url}",
            "  timeout: 5s",
            f"rule_files: ['{rules_dir}/*.yaml']",
            f"state_path: {tmp_path / 'state.db'}",
            f"listen_address: 127.0.0.1:{port}",
            "reload: {poll_interval: 200ms}",
        ]
    )
    write_configmap_volume(config_dir, {"guardian.yaml": good})
    base = f"http://127.0.0.1:{port}"
    process = guardian_run(config_dir / "guardian.yaml")

    def names() -> list[str]:
        return [a["labels"]["alertname"] for a in _alerts(base)]

    def reload_ok() -> str:
        metrics = _get(f"{base}/metrics")[1]
        return next(
            line.split()[1]
            for line in metrics.splitlines()
            if line.startswith("guardian_config_last_reload_successful ")
        )

    _wait(lambda: names() == ["Always"], "the first rule")
    write_configmap_volume(rules_dir, {"live.yaml": RUN_RULES.replace("Always", "Renamed")})
    _wait(lambda: names() == ["Renamed"], "the edited rule, without SIGHUP")
    assert reload_ok() == "1.0"

    write_configmap_volume(config_dir, {"guardian.yaml": good.replace("5s", "soon")})
    _wait(lambda: reload_ok() == "0.0", "the invalid edit reported")
    assert names() == ["Renamed"]
    assert process.poll() is None

    status = subprocess.run(
        [*GUARDIAN, "status", "--url", base, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert [a["labels"]["alertname"] for a in report["alerts"]] == ["Renamed"]
    assert report["pending"] == report["reclaimed"] == []

    write_configmap_volume(config_dir, {"guardian.yaml": good})
    _wait(lambda: reload_ok() == "1.0", "the fixed config")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    log = (tmp_path / "run0.log").read_text()
    assert "prometheus.timeout" in log
