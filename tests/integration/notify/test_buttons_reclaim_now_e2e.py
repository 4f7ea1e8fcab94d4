"""*Reclaim now*, where turned on: the policy's reclaim step during the grace period, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

from ..remediation.scenario import fleet_metrics, seed_cluster
from .buttons_stack import (
    ALICE,
    APP_TOKEN,
    CHANNEL,
    TOKEN,
    buttons,
    controller,
    events,
    parent,
    times,
    wait,
    write_config,
)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], app_tokens=[APP_TOKEN], channels=[CHANNEL]) as fake:
        yield fake


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_reclaim_now_runs_the_reclaim_step_early_and_once(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path, prom.url, kubeconfig, slack, reclaim_now=True)
    with controller(config) as c:
        clicks = c.parts.interactivity
        assert clicks is not None
        clicks.start()
        assert slack.socket_mode.wait_connected()
        c.evaluate(range(40, 46))  # in the grace period (10m)
        idle = parent(slack, "idle-train")
        assert buttons(idle) == ["keep_4h", "keep_24h", "exempt", "reclaim_now"]
        assert slack.click(ALICE, CHANNEL.id, idle.ts, "reclaim_now").wait_acked(3)
        wait(
            "the reclaim",
            lambda: kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 0,
        )
        wait("its Event", lambda: len(events(kube, "GPUIdleReclaimed", "idle-train")) == 1)
        deployment = kube.get("Deployment", "idle-train", "ml")
        assert deployment["metadata"]["annotations"]["gpu-guardian.io/original-replicas"] == "3"

        c.evaluate(range(46, 60))  # past the due time: the ladder does not reclaim again
        assert times(kube, "GPUIdleReclaimed", "idle-train") == 1
        ledger = c.parts.remediation.ledger  # type: ignore[union-attr]
        reclaims = [
            e
            for e in ledger.all_events()
            if e.step.value == "reclaim" and e.workload.name == "idle-train"
        ]
        assert [e.outcome.value for e in reclaims] == ["applied"]
        assert "requested by Slack user U0ALICE" in reclaims[0].reason

        def echoed() -> bool:
            c.drain()
            return "reclaimed it now" in str(parent(slack, "idle-train").replies)

        wait("the echo", echoed)
        assert buttons(parent(slack, "idle-train")) == ["restore"]
