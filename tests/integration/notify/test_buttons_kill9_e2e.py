"""``kill -9`` of the leader between a click's ack and its action: the action happens once.

Two real ``guardian run`` replicas with leader election and Socket Mode (the HA stack of
tests/integration/remediation). The leader takes the click (recorded in the cluster,
then acked) and is killed with SIGKILL while its read of the workload is stalled in the
API server, before it wrote anything. The survivor takes the Lease over, opens its own
Socket Mode connection, finds the click pending and acts on it once: one annotation,
one Event, one line in the episode's thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.click_store import DONE, NAME, data_key
from guardian.adapters.slack.block_actions import parse_click
from guardian.engine.notify.click_plan import CLICK_ANNOTATION
from guardian.model.policies import Annotations
from guardian.model.times import parse_rfc3339
from testbed.demo import config as cfg
from testbed.demo.processes import ProcessGroup
from testbed.demo.replicas import Replicas
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack, Message

from ..remediation.ha_stack import (
    CHANNEL,
    IDLE_X,
    NODE,
    TOKEN,
    handed_over,
    live_exporter,
    parents,
    seed,
    start_replicas,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]
APP_TOKEN = "xapp-ha-e2e"  # noqa: S105 - the fake workspace's app-level token


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], app_tokens=[APP_TOKEN], channels=[CHANNEL]) as fake:
        yield fake


@pytest.fixture
def stack(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> Iterator[Replicas]:
    seed(kube)
    with live_exporter() as port:
        prom = prometheus(
            scrape_interval="1s",
            evaluation_interval="2s",
            scrape_configs=cfg.scrape_configs({NODE: port}),
        )
        procs: ProcessGroup | None = None
        try:
            procs, replicas = start_replicas(tmp_path, kube, prom.url, slack, app_token=APP_TOKEN)
            yield replicas
        finally:
            if procs is not None:
                procs.stop_all()


def _with_buttons(slack: FakeSlack) -> Message | None:
    for message in parents(slack, IDLE_X):
        if any(b.get("type") == "actions" for b in message.blocks):
            return message
    return None


def test_a_leader_killed_between_ack_and_action_acts_once_through_the_next(
    stack: Replicas, kube: FakeKubeAPI, slack: FakeSlack
) -> None:
    replicas = stack
    replicas.start("a")
    wait_for("replica a to lead", lambda: replicas.leader() == "a", 20)
    replicas.start("b")
    wait_for("idle-x's parent shared", lambda: handed_over(kube, IDLE_X), 120)
    message = wait_for("idle-x's buttons", lambda: _with_buttons(slack), 30)
    assert slack.socket_mode.wait_connected(1, 10)
    assert slack.socket_mode.open_connections == 1  # the leader's; the standby holds none

    # a's read of the workload (the action's first step) stalls in the API server.
    path = f"deployments/{IDLE_X.workload}$"
    stall = kube.delay_next(30.0, verb="get", path=path, times=None)
    click = slack.click(cfg.ONCALL, CHANNEL.id, message.ts, "keep_4h")
    assert click.wait_acked(3), "the leader did not acknowledge within 3 s"
    # Until the stall ends nothing can be written to it: kill a while its reads hang.
    wait_for("a read of the workload to hang", lambda: stall.hits > 0 or None, 10)
    replicas.kill("a")
    kube.clear_faults()
    meta = kube.get("Deployment", IDLE_X.workload, IDLE_X.namespace)["metadata"]
    assert Annotations.SNOOZE_UNTIL not in (meta.get("annotations") or {})

    wait_for("replica b to take the Lease over", lambda: replicas.leader() == "b", 30)
    assert slack.socket_mode.wait_connected(1, 10)  # b opened its own

    def snoozed() -> str | None:
        obj = kube.get("Deployment", IDLE_X.workload, IDLE_X.namespace)
        return (obj["metadata"].get("annotations") or {}).get(Annotations.SNOOZE_UNTIL)

    until = parse_rfc3339(wait_for("b to act on the pending click", snoozed, 60))
    assert until is not None
    pressed = float(click.payload["actions"][0]["action_ts"])
    assert abs(until - (pressed + 4 * 3600)) < 1.5
    assert click.attempts == 1  # acked by a: Slack never sent it again
    key = data_key_of(click.payload)

    def done() -> bool:
        return f'"state":"{DONE}"' in kube.get("ConfigMap", NAME, "gpu-guardian")["data"][key]

    wait_for("the click marked done", done, 10)
    # The Event follows the annotation; the click is marked done after both.
    kept = [
        e
        for e in kube.objects("Event", IDLE_X.namespace)
        if e["reason"] == "GPUIdleKept" and e["involvedObject"]["name"] == IDLE_X.workload
    ]
    assert [e["count"] for e in kept] == [1]
    obj = kube.get("Deployment", IDLE_X.workload, IDLE_X.namespace)
    assert obj["metadata"]["annotations"][CLICK_ANNOTATION] == key

    def echoed() -> list[str] | None:
        [parent] = parents(slack, IDLE_X)
        lines = [r.text for r in parent.replies if "kept it until" in r.text]
        return lines or None

    assert len(wait_for("the thread's line", echoed, 30)) == 1
    assert len(parents(slack, IDLE_X)) == 1


def data_key_of(payload: dict[str, Any]) -> str:
    parsed = parse_click(payload)
    assert parsed is not None
    return data_key(parsed)
