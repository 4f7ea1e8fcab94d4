"""High availability end to end: two real ``guardian run`` replicas with leader election
against the fake Kubernetes API, the fake Slack and a real Prometheus, with the shipped
rule pack (compressed as the demo does) and enforcing policies.

1. ``kill -9`` of the leader in idle-x's grace period: the survivor takes the Lease
   over; idle-x keeps one Slack parent, is not notified again, and is reclaimed once, at
   the due time the old leader set (on the first cycle after it).
2. Both replicas restarted with their state directories wiped, in idle-y's grace
   period: the same three properties; and the idle alert keeps its ``for`` progress
   (restored from ALERTS_FOR_STATE, which needs the engine's restore from #15a).
3. ``guardian status`` against either replica gives the same answer.
4. A leader paused (SIGSTOP) until the other took the Lease over writes nothing after
   SIGCONT, and exits.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.cli import main as guardian_main
from guardian.model.policies import Annotations
from guardian.model.remediation_events import LadderStep
from guardian.model.shared_episode import SharedEpisode
from guardian.model.times import rfc3339
from testbed.demo import config as cfg
from testbed.demo.outcomes import RECLAIM_WITHIN_S
from testbed.demo.processes import ProcessGroup
from testbed.demo.replicas import Replicas
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

from .ha_stack import (
    CHANNEL,
    IDLE_X,
    IDLE_Y,
    NODE,
    TOKEN,
    Gpu,
    active_at,
    applied,
    dump,
    handed_over,
    live_exporter,
    notify_replies,
    parents,
    reclaimed,
    record_of,
    seed,
    start_replicas,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[CHANNEL]) as fake:
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
            procs, replicas = start_replicas(tmp_path, kube, prom.url, slack)
            yield replicas
        finally:
            if procs is not None:
                procs.stop_all()


def _status(replicas: Replicas, name: str, capsys: pytest.CaptureFixture[str]) -> Any:
    assert guardian_main(["status", "--config", str(replicas.config(name)), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _check_ladder(
    kube: FakeKubeAPI, slack: FakeSlack, gpu: Gpu, before: SharedEpisode, by: set[str]
) -> SharedEpisode:
    """One parent, one notify, one reclaim at the due time ``before`` had, by one of ``by``."""
    after = wait_for(f"{gpu.workload} reclaimed", lambda: reclaimed(kube, gpu), 90)
    assert after.episode == before.episode
    due = before.next_step_due
    assert due is not None
    notify = [m for m in after.steps if m.step is LadderStep.NOTIFY]
    reclaim = [m for m in after.steps if m.step is LadderStep.RECLAIM]
    assert len(notify) == 1, dump(after)
    assert len(reclaim) == 1, dump(after)
    assert reclaim[0].by in by, dump(after)
    # The first cycle at or after the due time reclaims it (within one evaluation
    # interval); the step's time is its write's, after that cycle's reads and re-check.
    late = reclaim[0].at - due
    assert 0 <= late < RECLAIM_WITHIN_S, f"reclaimed {late:.3f}s after its due time"
    scaled = [
        r
        for r in kube.requests(verb="patch", path=f"deployments/{gpu.workload}$")
        if r.status == 200 and "spec" in r.body
    ]
    assert len(scaled) == 1
    assert kube.get("Deployment", gpu.workload, gpu.namespace)["spec"]["replicas"] == 0
    notified = [
        e
        for e in kube.objects("Event", gpu.namespace)
        if e["reason"] == "GPUIdleNotified" and e["involvedObject"]["name"] == gpu.workload
    ]
    assert [e["count"] for e in notified] == [1]
    messages = wait_for(
        f"{gpu.workload}'s parent to say it is reclaimed",
        lambda: [m for m in parents(slack, gpu) if "[RECLAIMED" in m.text] or None,
        30,
    )
    assert len(parents(slack, gpu)) == 1, [m.text for m in slack.messages(CHANNEL.id)]
    (parent,) = messages
    assert notify_replies(parent) == 1, [r.text for r in parent.replies]
    return after


def test_failover_and_wiped_restarts_keep_the_ladder_and_its_slack_thread(
    stack: Replicas, kube: FakeKubeAPI, slack: FakeSlack, capsys: pytest.CaptureFixture[str]
) -> None:
    replicas = stack
    replicas.start("a")
    wait_for("replica a to lead", lambda: replicas.leader() == "a", 20)
    replicas.start("b")

    # 1. kill -9 of the leader in idle-x's grace period.
    x = wait_for("idle-x annotated and its parent shared", lambda: handed_over(kube, IDLE_X), 120)
    y = wait_for("idle-y annotated and its parent shared", lambda: handed_over(kube, IDLE_Y), 30)
    assert (x.slack is not None, y.slack is not None) == (True, True)
    replicas.kill("a")
    wait_for("replica b to take the Lease over", lambda: replicas.leader() == "b", 20)
    _check_ladder(kube, slack, IDLE_X, x, {"b"})
    state = {n: replicas.state_dir(n) / "state.db" for n in ("a", "b")}
    assert applied(state["a"], IDLE_X, LadderStep.NOTIFY) == 1
    assert applied(state["b"], IDLE_X, LadderStep.NOTIFY) == 0
    replicas.start("a")  # as its Deployment would: a standby with its state directory

    # 2. Both restarted with their state directories wiped, mid-ladder for idle-y.
    assert reclaimed(kube, IDLE_Y) is None
    before = active_at(replicas.url("b"), IDLE_Y)
    assert before is not None
    for name in ("b", "a"):
        replicas.stop(name)
    for name in ("a", "b"):
        replicas.wipe(name)
        assert not replicas.state_dir(name).exists()
    for name in ("a", "b"):
        replicas.start(name)
    after = _check_ladder(kube, slack, IDLE_Y, y, {"a", "b"})
    assert all(applied(state[n], IDLE_Y, LadderStep.NOTIFY) == 0 for n in ("a", "b"))
    leader = replicas.leader()
    assert leader is not None
    assert after.done(LadderStep.RECLAIM) is not None

    # 3. The same status from either replica, once both evaluated the same slots. The
    # ladder's part is the shared state's; the alerts are each replica's engine's, whose
    # activeAt agree only where the engines agree (restored from ALERTS_FOR_STATE).
    def same(*, times: bool) -> Any:
        answers = [_status(replicas, n, capsys) for n in ("a", "b")]
        if not times:
            answers = [_without_alert_times(a) for a in answers]
        return answers[0] if answers[0] == answers[1] else None

    status = wait_for("the replicas' status to agree", lambda: same(times=False), 30)
    assert {r["workload"] for r in status["reclaimed"]} == {"fast/Deployment/idle-x",
                                                            "slow/Deployment/idle-y"}  # fmt: skip
    assert any(a["labels"].get("pod") == IDLE_Y.pod for a in status["alerts"])

    # 4. A leader paused past its Lease (SIGSTOP) in the middle of a cycle writes nothing
    # once it resumes: the write it was about to make is fenced (or, if it passed the fence
    # just before the stop, refused on its resourceVersion), then it exits.
    paused = replicas.leader()
    assert paused is not None
    other = next(n for n in ("a", "b") if n != paused)
    child = replicas.children[paused]
    # Its next read of idle-x stalls in the API server (under the 10 s client timeout).
    stall = kube.delay_next(8.0, verb="get", path=f"deployments/{IDLE_X.workload}$")
    wait_for("the leader to be stalled mid-cycle", lambda: stall.hits == 1, 10)
    os.kill(child.pid, signal.SIGSTOP)
    try:
        # Meanwhile idle-x is restored by hand; the new leader ends its episode. Waking,
        # the paused one reads that too, and would end it again from its stale copy.
        _restore_by_hand(kube, IDLE_X)
        wait_for(f"replica {other} to take the Lease over", lambda: replicas.leader() == other, 20)
        wait_for(f"{other} to end idle-x's episode", lambda: _ended(kube, IDLE_X), 20)
        resumed = len(kube.requests())
    finally:
        os.kill(child.pid, signal.SIGCONT)
    assert child.process.wait(timeout=30) == 1  # it lost the Lease: exit status 1
    agent = f"gpu-guardian/{paused}"
    late = [
        (r.verb, r.path, r.status)
        for r in kube.requests()[resumed:]
        if r.user_agent == agent and r.verb not in ("get", "list", "watch")
    ]
    # A write whose fence check passed just before the SIGSTOP can still reach the API
    # server after SIGCONT; its resourceVersion precondition makes it lose to what the new
    # leader wrote (adapters/kube/fence.py). Nothing it sends may be accepted.
    assert all(status == 409 for _, _, status in late), late
    assert any(r.user_agent == agent for r in kube.requests()[:resumed])
    replicas.start(paused)

    # The alert kept its `for` progress across the restart: restored, not started over
    # (ALERTS_FOR_STATE keeps whole seconds).
    now = active_at(replicas.url(replicas.leader() or other), IDLE_Y)
    assert now is not None
    assert abs(now - before) < 1.0, (now, before)
    wait_for("the replicas' status to agree, times too", lambda: same(times=True), 20)


def _restore_by_hand(kube: FakeKubeAPI, gpu: Gpu) -> None:
    """What ``guardian restore`` from a laptop writes: replicas back, marks cleared."""
    cleared = dict.fromkeys((*Annotations.RECLAIM_KEYS, *Annotations.FLAG_KEYS))
    annotations = {**cleared, Annotations.RESTORED_AT: rfc3339(time.time())}
    patch = {"spec": {"replicas": 2}, "metadata": {"annotations": annotations}}
    kube.patch("Deployment", gpu.workload, patch, gpu.namespace)


def _ended(kube: FakeKubeAPI, gpu: Gpu) -> bool:
    record = record_of(kube, gpu)
    return record is not None and not record.live


def _without_alert_times(answer: Any) -> Any:
    return {**answer, "alerts": [{**a, "active_at": None} for a in answer["alerts"]]}
