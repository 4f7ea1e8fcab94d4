"""Config and policy edits without a restart, and the status API (issue 15): `guardian run`'s
runner with a real backfilled Prometheus and the fake Kubernetes API. A policy edit in a
ConfigMap volume takes effect at the next cycle; an invalid edit is reported and the old
policy stays; `guardian status --url` answers what the local mode does."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from guardian.app.runner import EngineRunner
from guardian.cli import main as guardian_main
from guardian.model.policies import Annotations
from guardian.model.remediation_events import WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from tests.helpers import write_configmap_volume

from .scenario import POLICY, RULES, at, fleet_metrics, seed_cluster

IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")
ELSEWHERE = POLICY.replace("  warmup: 10m", "  warmup: 10m\n  scope:\n    namespaces: [other]")
BROKEN = POLICY.replace("gracePeriod: 10m", "gracePeriod: soon")


class Clock:
    now = at(0)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def runner(prometheus: Any, kube: FakeKubeAPI, tmp_path: Path) -> Iterator[Any]:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    write_configmap_volume(tmp_path / "policies", {"idle.yaml": ELSEWHERE})
    config = tmp_path / "guardian.yaml"
    config.write_text(
        f"""\
prometheus: {{url: "{prom.url}", timeout: 10s}}
rule_files: {[str(p) for p in RULES]}
state_path: {tmp_path / "state.db"}
listen_address: 127.0.0.1:0
remediation:
  enabled: true
  dry_run: false
  policy_files: ["{tmp_path / "policies"}/*.yaml"]
  kubeconfig: {kube.write_kubeconfig(tmp_path / "kubeconfig")}
  leader_election: {{enabled: false}}
""",
        encoding="utf-8",
    )
    clock = Clock()
    runner = EngineRunner(str(config), {}, clock=clock)
    runner.parts.engine.load_state()
    runner.http.start()
    try:
        yield runner, clock, tmp_path / "policies"
    finally:
        runner.http.stop()
        runner.controller.close()
        runner.parts.querier.close()
        runner.parts.engine.close()


def _evaluate(runner: EngineRunner, clock: Clock, *minutes: int) -> None:
    for minute in minutes:
        clock.now = at(minute) + 0.5
        for group in runner.parts.engine.groups:
            runner.parts.engine.evaluate(group.key, at(minute))


def _steps(runner: EngineRunner) -> list[tuple[str, str]]:
    ledger = runner.controller.remediation.ledger  # type: ignore[union-attr]
    return [(e.step.value, e.outcome.value) for e in ledger.all_events() if e.workload == IDLE]


def _reload_metric(runner: EngineRunner) -> str:
    text = generate_latest(runner.parts.engine.metrics.registry).decode()
    (line,) = [
        x for x in text.splitlines() if x.startswith("guardian_config_last_reload_successful ")
    ]
    return line


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_policy_edit_applies_next_cycle_and_invalid_edit_keeps_the_old(
    runner: Any, kube: FakeKubeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    runner, clock, policies = runner
    _evaluate(runner, clock, *range(40, 46))  # GpuIdle fires at 45: out of the policy's scope
    assert _steps(runner) == []
    assert runner.poll_files() is None  # nothing changed

    write_configmap_volume(policies, {"idle.yaml": POLICY})  # every namespace now
    assert runner.poll_files() is True
    _evaluate(runner, clock, 46)  # the next cycle
    assert _steps(runner) == [("notify", "applied")]
    assert _reload_metric(runner) == "guardian_config_last_reload_successful 1.0"

    caplog.set_level(logging.ERROR, logger="guardian.app.runner")
    write_configmap_volume(policies, {"idle.yaml": BROKEN})
    assert runner.poll_files() is False
    assert runner.poll_files() is None  # reported once, not at every poll
    assert _reload_metric(runner) == "guardian_config_last_reload_successful 0.0"
    assert "keeping the running config" in caplog.text
    assert f"{policies}/idle.yaml:" in caplog.text
    assert "gracePeriod" in caplog.text

    _evaluate(runner, clock, 47)  # the valid policy is still in force: the ladder goes on
    assert _steps(runner) == [("notify", "applied"), ("annotate", "applied")]
    annotations = kube.get("Deployment", "idle-train", "ml")["metadata"]["annotations"]
    assert Annotations.PENDING_ACTION in annotations

    write_configmap_volume(policies, {"idle.yaml": POLICY})  # fixed: reloads, back to 1
    assert runner.poll_files() is True
    assert _reload_metric(runner) == "guardian_config_last_reload_successful 1.0"


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_status_api_answers_what_the_local_status_does(
    runner: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner, clock, policies = runner
    write_configmap_volume(policies, {"idle.yaml": POLICY})
    assert runner.poll_files() is True
    _evaluate(runner, clock, *range(40, 48))  # fires at 45, notified, annotated
    host, port = runner.http.address

    assert guardian_main(["status", "--url", f"http://{host}:{port}", "--json"]) == 0
    remote = json.loads(capsys.readouterr().out)
    # The CLI with the controller's config reads the same shared episode state.
    config = tmp_path / "guardian.yaml"
    assert guardian_main(["status", "--config", str(config), "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert remote == local
    (pending,) = [p for p in remote["pending"] if p["workload"] == "ml/Deployment/idle-train"]
    assert pending["next_step"] == "reclaim"
    assert pending["due"] == "2023-11-14T23:08:20Z"  # notified at 45m + the 10m grace
    assert "GpuIdle" in {a["labels"]["alertname"] for a in remote["alerts"]}

    assert guardian_main(["status", "--url", f"http://{host}:{port}"]) == 0
    assert "next reclaim  due 2023-11-14T23:08:20Z" in capsys.readouterr().out
    assert guardian_main(["status", "--url", "http://user:secret@127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    # The one redaction helper's form: userinfo replaced, so it shows that some was given.
    assert err.startswith(
        "guardian status: cannot reach http://[redacted]@127.0.0.1:1/api/v1/status"
    )
    assert "secret" not in err


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_a_new_query_concurrency_applies_at_reload(runner: Any) -> None:
    runner, clock, _ = runner
    config = Path(runner.config_path)
    before = runner.parts.engine.fan_out
    assert before.limit == 4
    assert runner.parts.engine.sharding is None
    text = config.read_text().replace(
        "timeout: 10s}", "timeout: 10s, concurrent_queries: 2, query_shards: 2}"
    )
    config.write_text(text)
    assert runner.reload() is True
    assert runner.parts.engine.fan_out.limit == 2
    assert runner.parts.engine.sharding.shards == 2
    _evaluate(runner, clock, 40, 41)
    assert runner.parts.engine.runtime(runner.parts.engine.groups[0].key).last is not None
    # An evaluation that still holds the old one (it began before the reload) finishes:
    # closed, it runs the calls in its own thread.
    assert before([lambda: 1, lambda: 2, lambda: 3]) == [1, 2, 3]
