"""Buttons end to end: `guardian run`'s wiring with Socket Mode against the fake Slack.

Real backfilled Prometheus and rule pack, the fake Kubernetes API, the fake Slack with
the real slack_sdk Socket Mode client (builtin, stdlib). Two idle Deployments: on one an
authorized user presses *Keep 4h* (the ladder stops, the thread says who and until
when), an unauthorized user's click changes nothing, a replayed click acts once; the
other is reclaimed and *Restore* brings back its exact replicas.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.model.times import parse_rfc3339
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

from ..remediation.scenario import fleet_metrics, seed_cluster
from .buttons_stack import (
    ALICE,
    APP_TOKEN,
    BOB,
    CHANNEL,
    MALLORY,
    ONCALL,
    SNOOZE,
    TOKEN,
    annotation,
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
        fake.add_usergroup(ONCALL, [BOB])
        yield fake


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_keep_refuse_replay_and_restore_over_socket_mode(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path, prom.url, kubeconfig, slack)
    with controller(config) as c:
        clicks = c.parts.interactivity
        assert clicks is not None
        clicks.start()
        assert slack.socket_mode.wait_connected(), "the leader opened no Socket Mode connection"
        c.evaluate(range(40, 46))  # notified; the grace period runs
        idle = parent(slack, "idle-train")
        assert buttons(idle) == ["keep_4h", "keep_24h", "exempt"]
        assert "kubectl annotate --overwrite -n ml deployment.apps/idle-train" in str(idle.blocks)

        # Not allowed: an ephemeral refusal, nothing changes.
        refused = slack.click(MALLORY, CHANNEL.id, idle.ts, "keep_4h")
        assert refused.wait_acked(3), "the click was not acknowledged within 3 s"
        wait("the refusal", lambda: bool(slack.ephemerals(MALLORY)))
        assert "not allowed" in slack.ephemerals(MALLORY)[0].text
        assert annotation(kube, "idle-train") is None
        # A refused click is not remembered as done: pressing again is refused again.
        assert slack.redeliver(refused).wait_acked(3)
        wait("the second refusal", lambda: len(slack.ephemerals(MALLORY)) == 2)
        assert "not allowed" in slack.ephemerals(MALLORY)[1].text

        # Alice keeps it for 4 hours.
        pressed = time.time()
        kept = slack.click(ALICE, CHANNEL.id, idle.ts, "keep_4h")
        assert kept.wait_acked(3)
        wait("the snooze annotation", lambda: annotation(kube, "idle-train") is not None)
        until = parse_rfc3339(annotation(kube, "idle-train"))
        assert until is not None
        assert abs(until - (pressed + 4 * 3600)) < 5

        def echoed(workload: str, text: str) -> bool:
            c.drain()
            return text in str(parent(slack, workload).replies)

        wait("the thread's echo", lambda: echoed("idle-train", "kept it until"))
        echo = [r for r in parent(slack, "idle-train").replies if "kept it until" in r.text]
        assert len(echo) == 1
        assert f"<@{ALICE}>" in echo[0].blocks[0]["text"]["text"]
        assert times(kube, "GPUIdleKept", "idle-train") == 1

        # The same click again (Slack retried it, or a double click): acted on once.
        again = slack.redeliver(kept)
        assert again.wait_acked(3)
        wait("the repeat's answer", lambda: bool(slack.ephemerals(ALICE)))
        assert "already done" in slack.ephemerals(ALICE)[0].text
        assert times(kube, "GPUIdleKept", "idle-train") == 1

        # A member of an allowed user group may press too.
        other = parent(slack, "race-train")
        bob = slack.click(BOB, CHANNEL.id, other.ts, "keep_24h")
        assert bob.wait_acked(3)
        wait("Bob's echo", lambda: echoed("race-train", "kept it until"))
        # Bob changes his mind by hand, so the ladder may go on.
        kube.patch("Deployment", "race-train", {"metadata": {"annotations": {SNOOZE: None}}}, "ml")

        # Pressed on a message still showing Keep, delivered after the reclaim: stale.
        late = slack.people.block_actions(slack.url, CHANNEL.id, other.ts, "keep_4h", ALICE)

        c.evaluate(range(46, 60))  # past the grace period
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3  # kept
        assert kube.get("Deployment", "race-train", "ml")["spec"]["replicas"] == 0  # reclaimed
        assert len(events(kube, "GPUIdleKept")) == 2

        reclaimed = parent(slack, "race-train")
        assert buttons(reclaimed) == ["restore"]  # the buttons follow the episode
        stale = slack.socket_mode.deliver("interactive", late)
        assert stale.wait_acked(3)
        wait("the stale click's answer", lambda: len(slack.ephemerals(ALICE)) == 2)
        assert "moved on (it is reclaimed)" in slack.ephemerals(ALICE)[1].text

        exempt = slack.click(ALICE, CHANNEL.id, idle.ts, "exempt")
        assert exempt.wait_acked(3)
        wait("the exemption", lambda: echoed("idle-train", "exempted it"))
        assert annotation(kube, "idle-train", "gpu-guardian.io/exclude") == "true"

        restore = slack.click(ALICE, CHANNEL.id, reclaimed.ts, "restore")
        assert restore.wait_acked(3)
        wait(
            "the restore",
            lambda: kube.get("Deployment", "race-train", "ml")["spec"]["replicas"] == 3,
        )
        c.evaluate(range(60, 61))
        wait("the restored parent", lambda: echoed("race-train", "restored it"))
        assert buttons(parent(slack, "race-train")) == []

    history = "\n".join(r.text for r in parent(slack, "race-train").replies)
    assert f"<@{ALICE}> restored it (scaled back to 3)" in history
    assert buttons(parent(slack, "idle-train")) == []  # exempted: nothing left to press
    assert TOKEN not in str([r.raw_body for r in slack.requests])
