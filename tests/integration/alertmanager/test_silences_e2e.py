"""Issue #20's second "done when": silences pause the ladder.

The controller as `guardian run` wires it (engine, remediation, Slack, Alertmanager output
and silence checks) on a real Prometheus, the fake Kubernetes API, the fake Slack API and
a real Alertmanager. The fleet's data is laid around the wall clock, because Alertmanager
keeps time: minute 45 of the scenario is now.

- GpuIdle fires on idle-train: the first step (notify) runs, the alert is in Alertmanager;
- a silence added with amtool holds the next cycle, and the status and the episode's Slack
  thread say "silenced in Alertmanager by alice until T";
- expiring it resumes the ladder (annotate);
- with Alertmanager down, no step runs (missing data), even past the grace period;
- once it is back, the reclaim happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.alertmanager import AlertmanagerClient
from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.app.controller import ControllerParts
from guardian.app.remediation.status import build_status
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from guardian.model.http_client import HttpClientConfig
from guardian.model.remediation_events import StepOutcome, WorkloadRef
from guardian.model.times import rfc3339
from testbed.feeds import with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.slackapi import Channel, FakeSlack
from tests.integration.remediation.scenario import POLICY, RULES
from tests.plugins.alertmanager_fixture import AlertmanagerFactory

TOKEN = "xoxb-silences"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0ALERTS", "gpu-alerts")
IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")
POD = "idle-train-abc-1"


def fleet(at: Callable[[float], float]) -> str:
    samples: list[Sample] = []
    for i in range(0, 90):
        ts = at(i)
        node = {"cluster": "c1", "node": "n1", "job": "gpu-guardian-exporter"}
        samples.append(Sample("guardian_exporter_nvml_up", node, ts, 1.0))
        samples.append(Sample("guardian_exporter_last_success_timestamp_seconds", node, ts, ts))
        for pod, uuid, util in ((POD, "GPU-1", 0.0), ("busy-serve-abc-1", "GPU-2", 0.8)):
            gpu = {"cluster": "c1", "node": "n1", "uuid": uuid, "gpu": uuid[-1]}
            samples.append(Sample("guardian_gpu_utilization_ratio", gpu, ts, util))
            alloc = {**gpu, "namespace": "ml", "pod": pod, "container": "main", "gpu_group": "a"}
            samples.append(Sample("guardian_pod_gpu_allocated", alloc, ts, 1.0))
    return render_openmetrics(with_idle_facts(samples))  # each pod runs a process on its GPU


def seed(kube: FakeKubeAPI) -> None:
    for name in ("idle-train", "busy-serve"):
        dep = kube.create(b.deployment(name, "ml", replicas=3))
        rs = kube.create(b.replicaset(f"{name}-abc", "ml", owners=[b.owner_reference(dep)]))
        kube.create(b.pod(f"{name}-abc-1", "ml", node="n1", owners=[b.owner_reference(rs)]))


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


def _config(tmp_path: Path, prom_url: str, am_url: str, kubeconfig: Path, slack: FakeSlack) -> Path:
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    config = {
        "prometheus": {"url": prom_url, "timeout": "10s"},
        "rule_files": [str(p) for p in RULES],
        "state_path": "state.db",
        "external_url": "https://guardian.example",
        "restore": {"from_prometheus": False},
        "remediation": {
            "enabled": True,
            "dry_run": False,
            "policy_files": ["policies.yaml"],
            "kubeconfig": str(kubeconfig),
            "leader_election": {"enabled": False},
        },
        "slack": {
            "api_url": slack.api_base_url,
            "token_env": "E2E_SLACK_TOKEN",
            "routing": {"default_channel": CHANNEL.id},
            "grouping": {"enabled": False},
            "delivery": {"post_interval": "50ms"},
        },
        "alertmanager": {"alertmanagers": [{"url": am_url, "timeout": "2s"}]},
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _drain(parts: ControllerParts, timeout: float = 60.0) -> None:
    notifier = parts.notifier
    assert notifier is not None
    deadline = time.monotonic() + timeout
    while notifier.outbox_depth() > 0:
        assert time.monotonic() < deadline, "the Slack outbox did not drain"
        notifier.drain()
        time.sleep(0.02)


def _thread(slack: FakeSlack) -> str:
    parents = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert len(parents) == 1, [m.text for m in slack.messages(CHANNEL.id)]
    return "\n".join(reply.text for reply in parents[0].replies)


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_a_silence_pauses_the_ladder_and_alertmanager_down_blocks_it(
    prometheus: Any,
    alertmanager: AlertmanagerFactory,
    kube: FakeKubeAPI,
    slack: FakeSlack,
    tmp_path: Path,
) -> None:
    t0 = time.time() - 45 * 60  # minute 45 is now

    def at(minute: float) -> float:
        return t0 + minute * 60

    prom = prometheus(openmetrics=fleet(at))
    am = alertmanager()
    seed(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, prom.url, am.url, kubeconfig, slack))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env={"E2E_SLACK_TOKEN": TOKEN}, clock=time.time)
    assert parts.remediation is not None
    assert parts.alertmanager is not None
    parts.alertmanager.start()
    ledger = parts.remediation.ledger

    def evaluate(*minutes: float) -> None:
        for minute in minutes:
            for group in engine.groups:
                engine.evaluate(group.key, at(minute))

    def steps() -> list[tuple[str, str]]:
        return [(e.step.value, e.outcome.value) for e in ledger.all_events() if e.workload == IDLE]

    def reasons() -> list[str]:
        return [e.reason for e in ledger.all_events() if e.workload == IDLE]

    try:
        evaluate(*range(40, 46))  # pending from 40, fires at 45 and reaches Alertmanager first
        assert steps() == [("notify", "applied")]

        silence = am.amtool(
            "silence",
            "add",
            f"pod={POD}",
            "alertname=GpuIdle",
            "-d",
            "1h",
            "-c",
            "maint",
            "-a",
            "alice",
        ).strip()
        api = AlertmanagerClient(HttpClientConfig(am.url, timeout=5))
        until = rfc3339(api.silences()[silence].ends_at)
        api.close()
        evaluate(46, 47)
        assert steps() == [("notify", "applied"), ("grace", "refused")]
        (held,) = [r for r in reasons() if "Alertmanager" in r]
        assert held == f"silenced in Alertmanager by alice until {until} (silence {silence}: maint)"
        status = build_status(ledger).to_json()["pending"]
        assert any(held in p["last"] for p in status)

        am.amtool("silence", "expire", silence)
        evaluate(48)
        assert steps()[-1] == ("annotate", "applied")

        am.stop()
        evaluate(*range(49, 57))  # past the grace period (notified at 45 + 10m)
        assert ("reclaim", "applied") not in steps()
        assert any(
            r.startswith("no Alertmanager answered, so silences are unknown") for r in reasons()
        )
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3

        am.restart()
        assert parts.alertmanager.queue is not None
        evaluate(57)  # sends GpuIdle again; the cycle after finds it
        assert parts.alertmanager.queue.wait_idle(15)
        evaluate(58)
        assert ("reclaim", "applied") in steps()
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 0
        applied = [e for e in ledger.all_events() if e.outcome is StepOutcome.APPLIED]
        assert len({(e.workload, e.step) for e in applied}) == len(applied)
        _drain(parts)
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()

    thread = _thread(slack)
    assert "Step notify applied" in thread
    assert f"silenced in Alertmanager by alice until {until}" in thread
    assert "Step annotate applied" in thread
    assert "no Alertmanager answered" in thread
    assert "Reclaimed ml/Deployment/idle-train" in thread
