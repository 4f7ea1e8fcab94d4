"""Buttons over HTTP interactivity: Slack's signed POSTs to our own listener.

A request with a bad signature, or a timestamp more than 5 minutes old, is answered 401
and changes nothing; a good one is answered 200 and acts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.slack.http_intake import InteractivityServer
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

from ..remediation.scenario import fleet_metrics, seed_cluster
from .buttons_stack import (
    ALICE,
    CHANNEL,
    SIGNING_SECRET,
    TOKEN,
    annotation,
    controller,
    events,
    parent,
    wait,
    write_config,
)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
        yield fake


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_signed_requests_act_and_forged_or_old_ones_get_401(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path, prom.url, kubeconfig, slack, mode="http")
    with controller(config) as c:
        clicks = c.parts.interactivity
        assert clicks is not None
        clicks.start()
        listener = clicks.listener
        assert isinstance(listener, InteractivityServer)
        c.evaluate(range(40, 46))
        idle = parent(slack, "idle-train")

        def press(**kwargs: Any) -> int:
            status, _ = slack.click_http(
                listener.url, SIGNING_SECRET, ALICE, CHANNEL.id, idle.ts, "keep_4h", **kwargs
            )
            return status

        assert press(tamper=True) == 401
        assert press(timestamp=time.time() - 301) == 401
        status, _ = slack.click_http(
            listener.url, "not-the-secret", ALICE, CHANNEL.id, idle.ts, "keep_4h"
        )
        assert status == 401
        time.sleep(0.5)  # nothing was taken, so nothing can act
        assert annotation(kube, "idle-train") is None
        assert clicks.service.acted == 0
        assert listener.rejected == 3

        started = time.monotonic()
        assert press(timestamp=time.time() - 200) == 200  # within the 5 minutes
        assert time.monotonic() - started < 3
        wait("the snooze annotation", lambda: annotation(kube, "idle-train") is not None)
        wait("the Event", lambda: len(events(kube, "GPUIdleKept")) == 1)

        def echoed() -> bool:
            c.drain()
            return "kept it until" in str(parent(slack, "idle-train").replies)

        wait("the echo", echoed)
