"""A leader that dies between the ack and the action: the next leader acts, once.

The first replica takes the click over Socket Mode (it is recorded in the cluster, then
acknowledged) and dies before acting: its worker never runs, its process state is gone.
The second replica, with a state database of its own, finds the click pending in the
cluster and acts on it once: one annotation, one Event, one echo in the same thread it
adopts from the shared episode state. A click found already applied on the workload is
not applied again (a leader that died after acting, before marking it done).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.click_store import NAME, ClickStore
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

from ..remediation.scenario import fleet_metrics, seed_cluster
from .buttons_stack import (
    ALICE,
    APP_TOKEN,
    CHANNEL,
    TOKEN,
    annotation,
    controller,
    parent,
    times,
    wait,
    write_config,
)

NAMESPACE = "gpu-guardian"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], app_tokens=[APP_TOKEN], channels=[CHANNEL]) as fake:
        yield fake


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_a_click_taken_by_a_dead_leader_is_acted_on_once_by_the_next(
    prometheus: Any, kube: FakeKubeAPI, slack: FakeSlack, tmp_path: Path
) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write_config(first, prom.url, kubeconfig, slack)
    shutil.copy(first / "policies.yaml", second / "policies.yaml")
    write_config(second, prom.url, kubeconfig, slack)

    with controller(first / "guardian.yaml") as a:
        assert a.parts.interactivity is not None
        a.parts.interactivity.listener.start()  # connected, but its worker never runs
        assert slack.socket_mode.wait_connected()
        a.evaluate(range(40, 46))
        idle = parent(slack, "idle-train")
        a.parts.notifier.publish_handover()  # type: ignore[union-attr]
        taken = slack.click(ALICE, CHANNEL.id, idle.ts, "keep_4h")
        assert taken.wait_acked(3)
        pending = ClickStore(a.parts.remediation.rest, NAMESPACE).pending()  # type: ignore[union-attr]
        assert [r.click.user for r in pending] == [ALICE]
    # The first replica is gone: acked, not acted on.
    assert annotation(kube, "idle-train") is None
    assert taken.attempts == 1  # Slack will not send it again: it was acknowledged

    with controller(second / "guardian.yaml") as b:
        clicks = b.parts.interactivity
        assert clicks is not None
        assert clicks.service.sweep() == 1
        assert annotation(kube, "idle-train") is not None
        assert clicks.service.sweep() == 0  # done: never again
        assert times(kube, "GPUIdleKept", "idle-train") == 1

        def echoed() -> bool:
            b.drain()
            return "kept it until" in str(parent(slack, "idle-train").replies)

        wait("the echo", echoed)

        # Died after acting, before marking it done: found applied, not applied again.
        done = kube.get("ConfigMap", NAME, NAMESPACE)["data"]
        undone = {k: v.replace('"state":"done"', '"state":"pending"') for k, v in done.items()}
        kube.patch("ConfigMap", NAME, {"data": undone}, NAMESPACE)
        assert clicks.service.sweep() == 1
        assert times(kube, "GPUIdleKept", "idle-train") == 1
        b.drain()
    [only] = [m for m in slack.messages(CHANNEL.id) if "idle-train" in m.text]
    assert [r.text for r in only.replies].count(
        next(r.text for r in only.replies if "kept it until" in r.text)
    ) == 1
