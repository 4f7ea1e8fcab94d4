"""Buttons end to end: `guardian run`'s wiring with Socket Mode against the fake Slack.

Real backfilled Prometheus and rule pack, the fake Kubernetes API, the fake Slack with
the real slack_sdk Socket Mode client (builtin, stdlib). Two idle Deployments: on one an
authorized user presses *Keep 4h* (the ladder stops, the thread says who and until
when), an unauthorized user's click changes nothing, a replayed click acts once; the
other is reclaimed and *Restore* brings back its exact replicas.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.app.controller import ControllerParts
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from guardian.model.times import parse_rfc3339
from guardian.sim.kubeapi import FakeKubeAPI
from guardian.sim.slackapi import Channel, FakeSlack, Message

from ..remediation.scenario import POLICY, RULES, at, fleet_metrics, seed_cluster

TOKEN = "xoxb-buttons"  # noqa: S105 - the fake workspace's tokens
APP_TOKEN = "xapp-buttons"  # noqa: S105
CHANNEL = Channel("C0ALERTS", "gpu-alerts")
ALICE, MALLORY, BOB = "U0ALICE", "U0MALLORY", "U0BOB"
ONCALL = "S0ONCALL"
SNOOZE = "gpu-guardian.io/snooze-until"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], app_tokens=[APP_TOKEN], channels=[CHANNEL]) as fake:
        fake.add_usergroup(ONCALL, [BOB])
        yield fake


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
            "token_env": "E2E_SLACK_TOKEN",
            "routing": {"default_channel": CHANNEL.id},
            "grouping": {"enabled": False},
            "delivery": {"post_interval": "50ms"},
            "interactivity": {
                "enabled": True,
                "app_token_env": "E2E_SLACK_APP_TOKEN",
                "authorized": {"by_namespace": {"ml": [ALICE, ONCALL]}},
            },
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _drain(parts: ControllerParts) -> None:
    notifier = parts.notifier
    assert notifier is not None
    deadline = time.monotonic() + 60
    while notifier.outbox_depth() > 0:
        assert time.monotonic() < deadline, "the Slack outbox did not drain"
        notifier.drain()
        time.sleep(0.02)


def _wait(what: str, ok: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _parent(slack: FakeSlack, workload: str) -> Message:
    [parent] = [m for m in slack.messages(CHANNEL.id) if workload in m.text]
    return parent


def _buttons(message: Message) -> list[str]:
    return [
        e["action_id"]
        for b in message.blocks
        if b["type"] == "actions"
        for e in b["elements"]
    ]


def _events(kube: FakeKubeAPI, reason: str) -> list[dict[str, Any]]:
    return [e for e in kube.objects("Event", "ml") if e.get("reason") == reason]


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_keep_refuse_replay_and_restore_over_socket_mode(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, prom.url, kubeconfig, slack))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    env = {"E2E_SLACK_TOKEN": TOKEN, "E2E_SLACK_APP_TOKEN": APP_TOKEN}
    parts = ControllerParts(settings, engine, env=env, clock=time.time)
    assert parts.interactivity is not None

    def evaluate(minutes: range) -> None:
        for minute in minutes:
            for group in engine.groups:
                engine.evaluate(group.key, at(minute))
        _drain(parts)

    try:
        parts.interactivity.start()
        assert slack.socket_mode.wait_connected(), "the leader opened no Socket Mode connection"
        evaluate(range(40, 46))  # notified; the grace period runs
        idle = _parent(slack, "idle-train")
        assert _buttons(idle) == ["keep_4h", "keep_24h", "exempt"]
        assert "kubectl annotate --overwrite -n ml deployment.apps/idle-train" in str(idle.blocks)

        # Not allowed: an ephemeral refusal, nothing changes.
        refused = slack.click(MALLORY, CHANNEL.id, idle.ts, "keep_4h")
        assert refused.wait_acked(3), "the click was not acknowledged within 3 s"
        _wait("the refusal", lambda: bool(slack.ephemerals(MALLORY)))
        assert "not allowed" in slack.ephemerals(MALLORY)[0].text
        assert SNOOZE not in kube.get("Deployment", "idle-train", "ml")["metadata"].get(
            "annotations", {}
        )

        # Alice keeps it for 4 hours.
        pressed = time.time()
        kept = slack.click(ALICE, CHANNEL.id, idle.ts, "keep_4h")
        assert kept.wait_acked(3)

        def annotation() -> str | None:
            meta = kube.get("Deployment", "idle-train", "ml")["metadata"]
            return (meta.get("annotations") or {}).get(SNOOZE)

        _wait("the snooze annotation", lambda: annotation() is not None)
        until = parse_rfc3339(annotation())
        assert until is not None and abs(until - (pressed + 4 * 3600)) < 5
        _wait("the thread's echo", lambda: _drain(parts) is None and "kept it" in str(
            _parent(slack, "idle-train").replies
        ))
        echo = [r for r in _parent(slack, "idle-train").replies if "kept it until" in r.text]
        assert len(echo) == 1 and f"<@{ALICE}>" in echo[0].blocks[0]["text"]["text"]
        assert len(_events(kube, "GPUIdleKept")) == 1

        # The same click again (Slack retried it, or a double click): acted on once.
        again = slack.redeliver(kept)
        assert again.wait_acked(3)
        _wait("the repeat's answer", lambda: bool(slack.ephemerals(ALICE)))
        assert "already done" in slack.ephemerals(ALICE)[0].text

        # A member of an allowed user group may press too.
        other = _parent(slack, "race-train")
        bob = slack.click(BOB, CHANNEL.id, other.ts, "keep_24h")
        assert bob.wait_acked(3)
        _wait("Bob's echo", lambda: _drain(parts) is None and "kept it" in str(
            _parent(slack, "race-train").replies
        ))
        kube.patch(  # Bob changes his mind by hand, so the ladder may go on
            "Deployment",
            "race-train",
            {"metadata": {"annotations": {SNOOZE: None}}},
            "ml",
        )

        # Pressed on a message still showing Keep, delivered after the reclaim: stale.
        late = slack.people.block_actions(slack.url, CHANNEL.id, other.ts, "keep_4h", ALICE)

        evaluate(range(46, 60))  # past the grace period
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3  # kept
        assert kube.get("Deployment", "race-train", "ml")["spec"]["replicas"] == 0  # reclaimed
        assert len(_events(kube, "GPUIdleKept")) == 2

        # Restore from the reclaimed one's parent: its buttons changed.
        reclaimed = _parent(slack, "race-train")
        assert _buttons(reclaimed) == ["restore"]
        stale = slack.socket_mode.deliver("interactive", late)
        assert stale.wait_acked(3)
        _wait("the stale click's answer", lambda: len(slack.ephemerals(ALICE)) == 2)
        assert "moved on (it is reclaimed)" in slack.ephemerals(ALICE)[1].text
        exempt = slack.click(ALICE, CHANNEL.id, idle.ts, "exempt")
        assert exempt.wait_acked(3)
        restore = slack.click(ALICE, CHANNEL.id, reclaimed.ts, "restore")
        assert restore.wait_acked(3)
        _wait(
            "the restore",
            lambda: kube.get("Deployment", "race-train", "ml")["spec"]["replicas"] == 3,
        )
        evaluate(range(60, 61))
        _wait("the restored parent", lambda: _drain(parts) is None and _buttons(
            _parent(slack, "race-train")
        ) == [])
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()

    history = "\n".join(r.text for r in _parent(slack, "race-train").replies)
    assert f"<@{ALICE}> restored it (scaled back to 3)" in history
    assert "exempted it" in "\n".join(r.text for r in _parent(slack, "idle-train").replies)
    assert TOKEN not in str([r.raw_body for r in slack.requests])
