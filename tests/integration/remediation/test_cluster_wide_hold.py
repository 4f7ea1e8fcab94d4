"""A hold that really is cluster-wide says so and why, in Slack and in `guardian status`
(issue #13, item 3): a scrape target that never reported which node it is on, and has no
`node` target label, fails; GpuExporterDown then names no node and holds every node."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.app.controller import ControllerParts
from guardian.app.remediation.status import build_status
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import Channel, FakeSlack

from .scenario import MINUTES, POLICY, RULES, at, fleet_metrics, seed_cluster

TOKEN = "xoxb-hold"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0HOLD", "gpu-alerts")
HOLD = (
    "missing data is not idleness: GpuExporterDown is firing for its cluster (cluster-wide "
    "hold: GpuExporterDown (reason=scrape_failing, job=gpu-guardian-exporter, "
    "instance=10.9.9.9:9835) names no node, so the data of every node in cluster c1 is in doubt)"
)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


def _history() -> str:
    """The fleet, plus a failing target that never said which node it is on."""
    nameless = {"cluster": "c1", "job": "gpu-guardian-exporter", "instance": "10.9.9.9:9835"}
    samples = [Sample("up", nameless, at(i), 0.0) for i in range(MINUTES)]
    return fleet_metrics().removesuffix("# EOF\n") + render_openmetrics(samples)


def _config(tmp_path: Path, prom_url: str, kubeconfig: Path, slack: FakeSlack) -> Path:
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    config = {
        "prometheus": {"url": prom_url, "timeout": "10s"},
        "rule_files": [str(p) for p in RULES],
        "state_path": "state.db",
        "remediation": {
            "enabled": True,
            "dry_run": False,
            "policy_files": ["policies.yaml"],
            "kubeconfig": str(kubeconfig),
            "leader_election": {"enabled": False},
        },
        "slack": {
            "api_url": slack.api_base_url,
            "token_env": "HOLD_SLACK_TOKEN",
            "routing": {"default_channel": CHANNEL.id},
            "grouping": {"enabled": False},
            "delivery": {"post_interval": "50ms"},
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_a_cluster_wide_hold_says_so_in_slack_and_status(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=_history())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, prom.url, kubeconfig, slack))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env={"HOLD_SLACK_TOKEN": TOKEN}, clock=time.time)
    assert parts.remediation is not None
    try:
        for minute in range(40, 56):
            for group in engine.groups:
                engine.evaluate(group.key, at(minute))
        notifier = parts.notifier
        assert notifier is not None
        deadline = time.monotonic() + 60
        while notifier.outbox_depth() > 0:
            assert time.monotonic() < deadline, "the Slack outbox did not drain"
            notifier.drain()
            time.sleep(0.02)
        report = build_status(parts.remediation.ledger)
        events = parts.remediation.ledger.all_events()
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()

    assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3
    [hold] = [h for h in report.holds if h["alertname"] == "GpuExporterDown"]
    assert hold["scope"] == "cluster-wide in cluster c1"
    assert hold["why"] in HOLD
    assert "cluster-wide in cluster c1" in report.render()
    node_holds = {h["scope"] for h in report.holds if h["alertname"] == "GpuExporterStale"}
    assert node_holds == {"node n2 in cluster c1"}  # the fleet's stale exporter: its node only
    held = [e for e in events if HOLD in e.reason and e.workload.name == "idle-train"]
    # Said once for the outage, whatever the cycles in between: held, never resumed yet.
    assert [(e.step.value, e.reason.startswith("held: no evidence since")) for e in held] == [
        ("hold", True)
    ]
    assert not [e for e in events if e.outcome.value == "applied"]  # nothing acted
    [parent] = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert any(HOLD in reply.text for reply in parent.replies), [r.text for r in parent.replies]
