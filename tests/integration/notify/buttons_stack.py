"""The buttons' end-to-end stage: `guardian run`'s wiring over the remediation scenario,
with the fake Slack (Socket Mode or HTTP interactivity) and the fake Kubernetes API."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from guardian.app.controller import ControllerParts
from guardian.app.rules.build import build_engine
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import load_settings
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import Channel, FakeSlack, Message

from ..remediation.scenario import POLICY, RULES, at

TOKEN = "xoxb-buttons"  # noqa: S105 - the fake workspace's secrets
APP_TOKEN = "xapp-buttons"  # noqa: S105
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # noqa: S105
CHANNEL = Channel("C0ALERTS", "gpu-alerts")
ALICE, MALLORY, BOB = "U0ALICE", "U0MALLORY", "U0BOB"
ONCALL = "S0ONCALL"
SNOOZE = "gpu-guardian.io/snooze-until"
ENV = {"E2E_SLACK_TOKEN": TOKEN, "E2E_SLACK_APP_TOKEN": APP_TOKEN, "E2E_SIGNING": SIGNING_SECRET}


def write_config(
    tmp_path: Path,
    prom_url: str,
    kubeconfig: Path,
    slack: FakeSlack,
    mode: str = "socket",
    *,
    reclaim_now: bool = False,
) -> Path:
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
                "mode": mode,
                "app_token_env": "E2E_SLACK_APP_TOKEN",
                "signing_secret_env": "E2E_SIGNING",
                "listen_address": "127.0.0.1:0",
                "reclaim_now": reclaim_now,
                "authorized": {"by_namespace": {"ml": [ALICE, ONCALL]}},
            },
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@dataclass
class Controller:
    parts: ControllerParts
    engine: RuleEngine

    def drain(self) -> None:
        notifier = self.parts.notifier
        assert notifier is not None
        deadline = time.monotonic() + 60
        while notifier.outbox_depth() > 0:
            assert time.monotonic() < deadline, "the Slack outbox did not drain"
            notifier.drain()
            time.sleep(0.02)

    def evaluate(self, minutes: range) -> None:
        for minute in minutes:
            for group in self.engine.groups:
                self.engine.evaluate(group.key, at(minute))
        self.drain()


@contextmanager
def controller(config: Path) -> Iterator[Controller]:
    """One replica of `guardian run` (its own state database under the config's folder)."""
    settings = load_settings(config)
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env=ENV, clock=time.time)
    try:
        yield Controller(parts, engine)
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()


def wait(what: str, ok: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def parent(slack: FakeSlack, workload: str) -> Message:
    [found] = [m for m in slack.messages(CHANNEL.id) if workload in m.text]
    return found


def buttons(message: Message) -> list[str]:
    return [e["action_id"] for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def events(kube: FakeKubeAPI, reason: str, workload: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in kube.objects("Event", "ml")
        if e.get("reason") == reason and workload in (None, e["involvedObject"]["name"])
    ]


def times(kube: FakeKubeAPI, reason: str, workload: str) -> int:
    """How often the Event of ``reason`` was posted on ``workload`` (a repeat bumps it)."""
    return sum(int(e.get("count") or 1) for e in events(kube, reason, workload))


def annotation(kube: FakeKubeAPI, workload: str, key: str = SNOOZE) -> str | None:
    meta = kube.get("Deployment", workload, "ml")["metadata"]
    return (meta.get("annotations") or {}).get(key)
