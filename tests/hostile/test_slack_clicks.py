"""Clicks that do not mean what they say, over the HTTP intake of `guardian run` (the
buttons' stage of tests/integration/notify, with a real backfilled Prometheus, the fake
Kubernetes API and the fake Slack):

- a validly signed click on one workload's message whose button value names another
  workload's episode is refused (an ephemeral answer and a log line), and neither
  workload changes: a click acts on the episode of the message pressed, as our own
  records of that message have it;
- a press is one press: Slack's retry of the same delivery acts once, while pressing
  *Keep 24h* again once the first keep has run its course keeps it again (docs/slack.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.slack.http_intake import InteractivityServer
from guardian.model.times import parse_rfc3339
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack, Message
from testbed.slackapi.interactions import find_button, post_signed
from tests.integration.notify.buttons_stack import (
    ALICE,
    CHANNEL,
    SIGNING_SECRET,
    SNOOZE,
    TOKEN,
    Controller,
    annotation,
    controller,
    parent,
    times,
    wait,
    write_config,
)
from tests.integration.remediation.scenario import fleet_metrics, seed_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


@pytest.fixture
def stage(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> Iterator[tuple[Controller, InteractivityServer]]:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path, prom.url, kubeconfig, slack, mode="http")
    with controller(config) as c:
        clicks = c.parts.interactivity
        assert clicks is not None
        clicks.start()
        assert isinstance(clicks.listener, InteractivityServer)
        c.evaluate(range(40, 46))  # notified; the grace period runs
        yield c, clicks.listener


def send(listener: InteractivityServer, payload: dict[str, Any]) -> None:
    status, _ = post_signed(listener.url, payload, SIGNING_SECRET, timestamp=time.time())
    assert status == 200


def value(message: Message, action_id: str) -> str:
    return str(find_button(message, action_id)[1]["value"])


def test_a_click_whose_value_names_another_episode_is_refused(
    stage: tuple[Controller, InteractivityServer],
    kube: FakeKubeAPI,
    slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    c, listener = stage
    idle, other = parent(slack, "idle-train"), parent(slack, "race-train")
    forged = slack.people.block_actions(slack.url, CHANNEL.id, idle.ts, "keep_4h", ALICE)
    forged["actions"][0]["value"] = value(other, "keep_4h")  # signed by Slack all the same
    with caplog.at_level(logging.WARNING, "guardian.app.notify.click_intake"):
        send(listener, forged)
        wait("the refusal", lambda: bool(slack.ephemerals(ALICE)))
    assert "does not belong to the message" in slack.ephemerals(ALICE)[0].text
    assert "is not the episode of message" in caplog.text
    assert annotation(kube, "idle-train") is None
    assert annotation(kube, "race-train") is None
    interactivity = c.parts.interactivity
    assert interactivity is not None
    assert interactivity.service.acted == 0

    # The same button with its own value acts on the message's workload, and only there.
    send(listener, slack.people.block_actions(slack.url, CHANNEL.id, idle.ts, "keep_4h", ALICE))
    wait("the snooze", lambda: annotation(kube, "idle-train") is not None)
    assert annotation(kube, "race-train") is None


def test_a_retry_acts_once_and_a_later_press_is_a_new_one(
    stage: tuple[Controller, InteractivityServer], kube: FakeKubeAPI, slack: FakeSlack
) -> None:
    c, listener = stage
    idle = parent(slack, "idle-train")

    def kept() -> int:
        c.drain()
        return sum("kept it until" in r.text for r in parent(slack, "idle-train").replies)

    first = slack.people.block_actions(slack.url, CHANNEL.id, idle.ts, "keep_24h", ALICE)
    send(listener, first)
    wait("the first keep", lambda: kept() == 1)
    send(listener, first)  # Slack's retry of the same delivery
    wait("the retry's answer", lambda: bool(slack.ephemerals(ALICE)))
    assert "already done" in slack.ephemerals(ALICE)[0].text
    assert times(kube, "GPUIdleKept", "idle-train") == 1

    # The keep runs its course (here: its snooze ends now), and Alice presses again.
    past = "2000-01-01T00:00:00Z"
    kube.patch("Deployment", "idle-train", {"metadata": {"annotations": {SNOOZE: past}}}, "ml")
    time.sleep(0.01)  # another press, another action_ts
    again = slack.people.block_actions(slack.url, CHANNEL.id, idle.ts, "keep_24h", ALICE)
    assert again["actions"][0]["action_ts"] != first["actions"][0]["action_ts"]
    pressed = time.time()
    send(listener, again)
    wait("the second keep", lambda: kept() == 2)
    until = parse_rfc3339(annotation(kube, "idle-train"))
    assert until is not None
    assert abs(until - (pressed + 24 * 3600)) < 5  # kept again, from the second press
    assert len(slack.ephemerals(ALICE)) == 1  # no "already done" this time
