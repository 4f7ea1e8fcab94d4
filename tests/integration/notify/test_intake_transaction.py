"""Notification intake does its network I/O before the state transaction, never inside it.

`guardian run`'s wiring (ControllerParts) on a rule engine whose alert fires at once, the
fake Kubernetes API stalling the owner read 10 s, and the fake Slack. The engine's state
transaction, which also writes the notifier's rows, must not last the 10 s: while the
stalled read is in flight the database is free, and no socket is written on a thread
that has a transaction open.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.sqlite_db import Database
from guardian.app.controller import ControllerParts
from guardian.app.rules.engine_setup import EngineSinks
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import load_settings
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.loader import parse_rule_file
from guardian.model.labels import LabelSet
from guardian.model.notifications import MENTION_ANNOTATION
from guardian.model.query import PromSample, QueryResult
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.slackapi import Channel, FakeSlack

pytestmark = pytest.mark.e2e

STALL = 10.0  # seconds the API server sits on the owner read
TOKEN = "xoxb-intake"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0ALERTS", "gpu-alerts")
T0 = 1_700_000_000.0
POD_PATH = r"/namespaces/ml/pods/train-abc-1$"

RULES = """
groups:
  - name: gpu-idle
    interval: 1m
    rules:
      - alert: GpuIdle
        expr: guardian_gpu_idle
        labels:
          severity: warning
        annotations:
          summary: An allocated GPU is idle.
"""

# Remediation is on (it owns the cluster client the owner lookup uses) but acts on
# nothing here: the only cluster reads are the notifier's.
POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata:
  name: nothing
spec:
  mode: enforce
  alerts:
    names: [NeverFires]
"""


@dataclass
class TransactionWatch:
    """Times every open transaction, and trips when a socket is written inside one."""

    spans: list[float] = field(default_factory=list)
    sends: list[str] = field(default_factory=list)
    inside: threading.local = field(default_factory=threading.local)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = Database.transaction
        watch = self

        @contextmanager
        def timed(db: Database) -> Iterator[Any]:
            with original(db) as conn:
                watch.inside.open = True
                started = time.monotonic()
                try:
                    yield conn
                finally:
                    watch.spans.append(time.monotonic() - started)
                    watch.inside.open = False

        def tripwire(name: str) -> Any:
            real = getattr(socket.socket, name)

            def send(sock: socket.socket, *args: Any, **kwargs: Any) -> Any:
                if getattr(watch.inside, "open", False):
                    watch.sends.append(f"{name} to {sock.getpeername()}")
                return real(sock, *args, **kwargs)

            return send

        monkeypatch.setattr(Database, "transaction", timed)
        for name in ("send", "sendall"):
            monkeypatch.setattr(socket.socket, name, tripwire(name))


def _seed(kube: FakeKubeAPI) -> None:
    kube.create(b.namespace("ml"))
    dep = kube.create(b.deployment("train", "ml", annotations={MENTION_ANNOTATION: "U0ALICE"}))
    rs = kube.create(b.replicaset("train-abc", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-abc-1", "ml", owners=[b.owner_reference(rs)]))


def _settings(tmp_path: Path, kube: FakeKubeAPI, slack: FakeSlack) -> Any:
    (tmp_path / "rules.yaml").write_text(RULES, encoding="utf-8")
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    config = {
        "prometheus": {"url": "http://127.0.0.1:9"},  # never asked: the query is injected
        "rule_files": ["rules.yaml"],
        "state_path": "state.db",
        "remediation": {
            "enabled": True,
            "policy_files": ["policies.yaml"],
            "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
            "api_timeout": f"{STALL + 20:.0f}s",  # the stalled read is answered, late
            "leader_election": {"enabled": False},
        },
        "slack": {
            "api_url": slack.api_base_url,
            "token_env": "INTAKE_SLACK_TOKEN",
            "routing": {"default_channel": CHANNEL.id},
            "delivery": {"post_interval": "50ms"},
        },
    }
    path = tmp_path / "guardian.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return load_settings(path)


def _engine(tmp_path: Path) -> RuleEngine:
    rule_file = parse_rule_file(RULES, "rules.yaml")
    groups = [CompiledGroup.compile(g, 60.0) for g in rule_file.groups]
    idle = PromSample(LabelSet({"namespace": "ml", "pod": "train-abc-1", "node": "n1"}), 0.0)
    return RuleEngine(
        groups,
        lambda _expr, _ts: QueryResult((idle,)),
        sinks=EngineSinks(store=AlertStore.open(str(tmp_path / "state.db"))),
    )


@pytest.mark.timeout(120)
def test_a_stalled_owner_read_does_not_hold_the_state_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        FakeKubeAPI.start(namespaces=("default", "gpu-guardian")) as kube,
        FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as slack,
    ):
        _seed(kube)
        settings = _settings(tmp_path, kube, slack)
        engine = _engine(tmp_path)
        parts = ControllerParts(
            settings, engine, env={"INTAKE_SLACK_TOKEN": TOKEN}, clock=lambda: T0
        )
        assert parts.notifier is not None
        db = engine.store.db if engine.store is not None else None
        assert db is not None
        watch = TransactionWatch()
        watch.install(monkeypatch)
        stall = kube.delay_next(STALL, verb="get", path=POD_PATH)

        probe: dict[str, float] = {}

        def probe_the_lock() -> None:
            while stall.hits == 0:  # until the stalled read has reached the server
                time.sleep(0.01)
            asked = time.monotonic()
            with db.transaction():
                probe["wait"] = time.monotonic() - asked
            probe["read_answered"] = len(kube.requests(verb="get", path=POD_PATH))

        prober = threading.Thread(target=probe_the_lock, daemon=True)
        prober.start()
        try:
            started = time.monotonic()
            [group] = engine.groups
            evaluation = engine.evaluate(group.key, T0)
            took = time.monotonic() - started
            prober.join(STALL + 10)
            parts.notifier.tick()
            deadline = time.monotonic() + 30
            while parts.notifier.outbox_depth() > 0:
                assert time.monotonic() < deadline, "the Slack outbox did not drain"
                parts.notifier.drain()
                time.sleep(0.02)
        finally:
            monkeypatch.undo()
            parts.close()
            engine.close()

    assert [t.kind.value for t in evaluation.transitions] == ["firing"]
    assert stall.hits == 1
    assert took >= STALL - 0.5  # the owner read did sit in the stall
    # While it sat there the database was free, and the read was still unanswered.
    assert probe["read_answered"] == 0
    assert probe["wait"] < 2.0, probe
    assert max(watch.spans) < 2.0, sorted(watch.spans)[-3:]
    assert watch.sends == []
    # The late answer still made it into the message: the owner's workload and mention.
    [message] = slack.messages(CHANNEL.id)
    assert "Deployment train" in message.text
    assert "<@U0ALICE>" in message.text
