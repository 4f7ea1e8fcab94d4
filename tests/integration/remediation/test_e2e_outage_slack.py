"""An outage of the query endpoint in the middle of a grace period, end to end: the real
rule pack on a real Prometheus behind a proxy that answers 503 for a while, the fake
Kubernetes API and the fake Slack. The issue: 1.3 s into an 8 s outage the episode was
closed and never reclaimed; after 20 s a second Slack parent, a second notify, and the
grace period restarted.

Whatever the outage's length: one Slack parent, one notify, "held" once and "resumed"
once in its thread, no write during the outage, and the reclaim after the evidence has
been healthy for a full evaluation (after a long one, with ``reproveAfterOutage``, once
the idle window has been seen again)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.app.controller import ControllerParts
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from guardian.model.remediation_events import LadderStep, StepOutcome
from testbed.kubeapi import FakeKubeAPI
from testbed.query_proxy import ProxyBehaviour, QueryProxy
from testbed.slackapi import Channel, FakeSlack

from .scenario import POLICY, RULES, at, fleet_metrics, seed_cluster

TOKEN = "xoxb-outage"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0OUTAGE", "gpu-alerts")


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


def _config(tmp_path: Path, url: str, kubeconfig: Path, slack: FakeSlack, reprove: str) -> Path:
    policy = POLICY.replace(
        "gracePeriod: 10m", f"gracePeriod: 10m\n    reproveAfterOutage: {reprove}"
    )
    (tmp_path / "policies.yaml").write_text(policy, encoding="utf-8")
    config = {
        "prometheus": {"url": url, "timeout": "5s"},
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
            "token_env": "OUTAGE_SLACK_TOKEN",
            "routing": {"default_channel": CHANNEL.id},
            "grouping": {"enabled": False},
            "delivery": {"post_interval": "20ms"},
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


# (outage minutes, from two minutes after the notification; reproveAfterOutage; the
# reclaim's minute after the first healthy one). The grace period (10m) ends during both:
# shorter than the idle window (30m): one more evaluation; longer, with
# reproveAfterOutage: the idle window seen again since the evidence came back.
SHAPES = [
    pytest.param(10, "0s", 1, id="10m outage: reclaim one evaluation after it"),
    # GpuIdle looks back 30m (the allocation's `offset 30m`; its facts are one sample
    # each): the reclaim 30m after the evidence.
    pytest.param(34, "20m", 30, id="34m outage: the idle window proven again"),
]


@pytest.mark.e2e
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("down", "reprove", "after"), SHAPES)
def test_an_outage_mid_grace_keeps_one_episode_and_one_thread(
    prometheus: Any,
    kube: FakeKubeAPI,
    slack: FakeSlack,
    tmp_path: Path,
    down: int,
    reprove: str,
    after: int,
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    proxy = QueryProxy(prom.url).start()
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(_config(tmp_path, proxy.url, kubeconfig, slack, reprove))
    engine_parts = build_engine(settings)
    engine = engine_parts.engine
    parts = ControllerParts(settings, engine, env={"OUTAGE_SLACK_TOKEN": TOKEN}, clock=time.time)
    assert parts.remediation is not None
    ledger = parts.remediation.ledger
    replicas: dict[int, int] = {}

    def minute(m: int) -> None:
        for group in engine.groups:
            engine.evaluate(group.key, at(m))
        replicas[m] = kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"]

    def steps(step: LadderStep) -> list[float]:
        return [
            e.at
            for e in ledger.all_events()
            if e.workload.name == "idle-train"
            and e.step is step
            and e.outcome in (StepOutcome.APPLIED, StepOutcome.PLANNED)
        ]

    try:
        m = 40
        while not steps(LadderStep.NOTIFY):
            minute(m)
            m += 1
        notified = m - 1
        minute(m)  # annotate
        start = m + 1
        proxy.behaviour = ProxyBehaviour(status=503)
        for m in range(start, start + down):
            minute(m)
        proxy.behaviour = ProxyBehaviour()
        end = start + down
        for m in range(end, end + after + 2):
            minute(m)
        _drain(parts)
        said = [
            (round((e.at - at(0)) / 60, 1), e.step.value, e.outcome.value, e.reason[:90])
            for e in ledger.all_events()
            if e.workload.name == "idle-train"
        ]
        counts = [len(steps(s)) for s in (LadderStep.NOTIFY, LadderStep.HOLD, LadderStep.RESUME)]
    finally:
        parts.close()
        engine_parts.querier.close()
        engine.close()
        proxy.stop()

    reclaimed = min((k for k, v in replicas.items() if v == 0), default=None)
    assert all(replicas[k] == 3 for k in range(start, end)), replicas  # never during
    assert reclaimed == end + after, (notified, start, end, said)
    assert counts == [1, 1, 1], said  # notified, held and resumed once each
    parents = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert len(parents) == 1, [m.text for m in slack.messages(CHANNEL.id)]
    thread = [r.text for r in parents[0].replies]
    assert sum("Held: no evidence since" in t for t in thread) == 1, thread
    assert sum("Resumed: its evidence is back" in t for t in thread) == 1, thread
    assert sum("Reclaimed ml/Deployment/idle-train" in t for t in thread) == 1, thread
    said_in_thread = [t.split(": ", 1)[1] for t in thread]  # after "[FIRING] GpuIdle pod: "
    order = [t.split(" ")[0] for t in said_in_thread if t.startswith(("Held", "Resumed", "Recl"))]
    assert order == ["Held:", "Resumed:", "Reclaimed"], thread
