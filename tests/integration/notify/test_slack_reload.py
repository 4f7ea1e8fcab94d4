"""Slack settings reload in place (issue 15): `guardian run`'s wiring with the fake Slack.
A routing edit sends the next episode to the new channel with the same outbox; an edit
Slack cannot work with (no token) is refused whole and the running settings stay."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.alert_store import AlertStore
from guardian.app.controller import ControllerParts
from guardian.app.rules.build import compile_groups
from guardian.app.rules.engine_setup import EngineSinks
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import load_settings
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian_common.errors import ConfigError
from testbed.slackapi import Channel, FakeSlack

pytestmark = pytest.mark.e2e

TOKEN = "xoxb-reload"  # noqa: S105 - the fake workspace's token
FIRST, SECOND = Channel("C0FIRST", "first"), Channel("C0SECOND", "second")
T0 = 1_700_000_000.0
RULES = """
groups:
  - name: gpu-idle
    interval: 1m
    rules:
      - alert: GpuIdle
        expr: guardian_gpu_idle
        labels: {severity: warning}
        annotations: {summary: An allocated GPU is idle.}
"""


def _config(tmp_path: Path, slack: FakeSlack, **overrides: Any) -> Path:
    (tmp_path / "rules.yaml").write_text(RULES, encoding="utf-8")
    config = {
        "prometheus": {"url": "http://127.0.0.1:9"},  # never asked: the query is injected
        "rule_files": ["rules.yaml"],
        "state_path": "state.db",
        "slack": {
            "api_url": slack.api_base_url,
            "token_env": "RELOAD_SLACK_TOKEN",
            "routing": {"default_channel": FIRST.id},
            "delivery": {"post_interval": "50ms"},
            **overrides,
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _drain(parts: ControllerParts) -> None:
    assert parts.notifier is not None
    deadline = time.monotonic() + 30
    while parts.notifier.outbox_depth() > 0:
        assert time.monotonic() < deadline, "the Slack outbox did not drain"
        parts.notifier.drain()
        time.sleep(0.02)


@pytest.mark.timeout(120)
def test_a_routing_edit_applies_in_place_and_an_unusable_one_is_refused(
    tmp_path: Path,
) -> None:
    idle = {"pods": ["train-0"]}

    def query(_expr: str, _ts: float) -> QueryResult:
        return QueryResult(
            tuple(PromSample(LabelSet({"namespace": "ml", "pod": p}), 0.0) for p in idle["pods"])
        )

    with FakeSlack.start(tokens=[TOKEN], channels=[FIRST, SECOND]) as slack:
        path = _config(tmp_path, slack)
        settings = load_settings(path)
        groups = compile_groups(settings)
        engine = RuleEngine(
            groups, query, sinks=EngineSinks(store=AlertStore.open(str(tmp_path / "state.db")))
        )
        env = {"RELOAD_SLACK_TOKEN": TOKEN}
        parts = ControllerParts(settings, engine, env=env, clock=lambda: T0)
        try:
            (group,) = engine.groups
            engine.evaluate(group.key, T0)
            _drain(parts)
            assert len(slack.messages(FIRST.id)) == 1

            edited = load_settings(_config(tmp_path, slack, routing={"default_channel": SECOND.id}))
            parts.prepare_reload(edited, compile_groups(edited))()
            idle["pods"].append("train-1")
            engine.evaluate(group.key, T0 + 60)
            _drain(parts)
            assert len(slack.messages(SECOND.id)) == 1  # the new episode, routed anew
            assert len(slack.messages(FIRST.id)) == 1  # the first episode's thread stays

            missing = "NO_SUCH_VARIABLE"
            unusable = load_settings(_config(tmp_path, slack, token_env=missing))
            with pytest.raises(ConfigError, match=missing):
                parts.prepare_reload(unusable, compile_groups(unusable))
            assert parts.notifier is not None
            assert parts.notifier.settings == edited.slack  # nothing changed
        finally:
            parts.close()
            engine.close()
