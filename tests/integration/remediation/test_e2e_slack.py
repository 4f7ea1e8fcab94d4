"""`guardian run`'s wiring end to end: engine + remediation + Slack, as ControllerParts builds them.

Real backfilled Prometheus, the real rule pack, the fake Kubernetes API and the fake Slack
Web API with the real slack_sdk client: an idle Deployment gets one Slack parent message for
its episode, updated through the reclaim and the restore, with the history in its thread.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.app.controller import ControllerParts
from guardian.app.remediation.restore import restore_workload
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from guardian.cli import main as guardian_main
from guardian.model.policies import Annotations
from guardian.model.remediation_events import WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import Channel, FakeSlack

from .scenario import POLICY, RULES, at, fleet_metrics, seed_cluster

TOKEN = "xoxb-e2e"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0ALERTS", "gpu-alerts")
IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


def _config(tmp_path: Path, prom_url: str, kubeconfig: Path, slack: FakeSlack) -> Path:
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    config = {
        "prometheus": {"url": prom_url, "timeout": "10s"},
        "rule_files": [str(p) for p in RULES],
        "state_path": "state.db",
        "external_url": "https://guardian.example",
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


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_one_slack_thread_follows_the_idle_episode_through_reclaim_and_restore(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, prom.url, kubeconfig, slack))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env={"E2E_SLACK_TOKEN": TOKEN}, clock=time.time)
    assert parts.remediation is not None
    try:
        for minute in range(40, 56):
            for group in engine.groups:
                engine.evaluate(group.key, at(minute))
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 0
        loop = parts.remediation.loop
        restore_workload(IDLE, loop.reader, loop.steps, at(56))
        for group in engine.groups:
            engine.evaluate(group.key, at(57))
        _drain(parts)
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()

    parents = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert len(parents) == 1, [m.text for m in slack.messages(CHANNEL.id)]
    parent = parents[0]
    history = "\n".join(reply.text for reply in parent.replies)
    assert parent.update_count >= 3  # grace, reclaimed, restored
    assert parent.text.startswith("[RESTORED] warning GpuIdle: ml/Deployment idle-train")
    assert "Step notify applied" in history
    assert "Reclaimed ml/Deployment/idle-train (was 3 replicas)" in history
    assert "Restored ml/Deployment/idle-train: scaled back to 3" in history
    assert TOKEN not in repr(slack.requests[-1].body)


def _footer_episodes(message: Any) -> list[str]:
    """The episode ids the footers (context blocks) of a message show, with their word."""
    found = []
    for block in message.blocks:
        if block.get("type") == "context":
            for element in block.get("elements", []):
                found += re.findall(r"((?:Alert e|E)pisode) `([0-9a-f]+)`", element.get("text", ""))
    return [f"{word} {episode}" for word, episode in found]


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_the_slack_footer_shows_the_episode_of_the_annotation_ledger_events_and_status(
    prometheus: Any,
    kube: FakeKubeAPI,
    slack: FakeSlack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One episode id for people: the parent's and replies' footers, the workload's
    ``gpu-guardian.io/episode`` annotation, its Events, the ledger, ``guardian status``
    and ``/api/v1/status`` all name the ladder's (workload) episode."""
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, prom.url, kubeconfig, slack))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env={"E2E_SLACK_TOKEN": TOKEN}, clock=time.time)
    assert parts.remediation is not None
    try:
        for minute in range(40, 56):
            for group in engine.groups:
                engine.evaluate(group.key, at(minute))
        _drain(parts)
        annotations = kube.get("Deployment", "idle-train", "ml")["metadata"]["annotations"]
        ledger = {e.episode for e in parts.remediation.ledger.all_events() if e.workload == IDLE}
        status = parts.status()
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()

    episode = annotations[Annotations.EPISODE]
    assert ledger == {episode}
    assert [r["episode"] for r in status["reclaimed"] if r["workload"] == str(IDLE)] == [episode]
    capsys.readouterr()
    assert guardian_main(["status", "--state", str(tmp_path / "state.db")]) == 0
    shown = capsys.readouterr().out
    assert f"    episode {episode}\n" in shown.partition("Reclaimed workloads")[2]
    events = [
        e["metadata"]["annotations"][Annotations.EPISODE]
        for e in kube.objects("Event", "ml")
        if e["involvedObject"]["name"] == "idle-train"
    ]
    assert events
    assert {marker.partition("/")[0] for marker in events} == {episode}
    parents = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert len(parents) == 1
    parent = parents[0]
    assert _footer_episodes(parent) == [f"Episode {episode}"]
    assert parent.replies
    assert [_footer_episodes(r) for r in parent.replies] == [[f"Episode {episode}"]] * len(
        parent.replies
    )
