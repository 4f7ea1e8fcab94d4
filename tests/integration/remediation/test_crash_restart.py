"""kill -9 in the middle of the ladder, then a restart: the ladder continues and no
action is done twice (state lives on the object and in the ledger)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.ledger import Ledger
from guardian.model.policies import Annotations
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from testbed.kubeapi import FakeKubeAPI

from .scenario import ROOT, set_stage

IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")


class Worker:
    def __init__(self, args: list[str], log: Path) -> None:
        self.stderr = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.remediation.worker", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        assert self.read() == "ready"

    def read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line, f"worker exited with {self.proc.poll()}"
        return line

    def send(self, minute: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{minute}\n")
        self.proc.stdin.flush()

    def step(self, *minutes: int) -> None:
        for minute in minutes:
            self.send(minute)
            assert self.read() == f"done {minute}"

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=10) == -signal.SIGKILL
        self.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        self.stderr.close()


def wait_for(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_kill_9_mid_ladder_then_restart_does_nothing_twice(
    prometheus: Any, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    stage = set_stage(prometheus, kube, tmp_path)
    state, args = stage.state, stage.argv
    log = tmp_path / "worker.log"

    first = Worker(args, log)
    try:
        first.step(*range(40, 46))  # pending, then firing and notified at 45
        # The annotate patch stalls in the API server; the controller dies while it waits.
        fault = kube.delay_next(2.0, verb="patch", path="deployments/idle-train$")
        first.send(46)
        wait_for(lambda: fault.hits == 1)
        first.kill9()
    finally:
        first.close()
    # The server still completes the request it received.
    wait_for(
        lambda: (
            Annotations.FLAGGED_AT
            in (kube.get("Deployment", "idle-train", "ml")["metadata"].get("annotations") or {})
        )
    )

    second = Worker(args, log)
    try:
        second.step(*range(46, 57))
    finally:
        second.stop()

    dep = kube.get("Deployment", "idle-train", "ml")
    assert dep["spec"]["replicas"] == 0
    assert dep["metadata"]["annotations"][Annotations.ORIGINAL_REPLICAS] == "3"
    patches = [
        r for r in kube.requests(verb="patch", path="deployments/idle-train$") if r.status == 200
    ]
    annotate = [
        r for r in patches if Annotations.FLAGGED_AT in r.body["metadata"].get("annotations", {})
    ]
    reclaim = [r for r in patches if "spec" in r.body]
    assert (len(annotate), len(reclaim)) == (1, 1)
    notified = [
        e
        for e in kube.objects("Event", "ml")
        if e["reason"] == "GPUIdleNotified" and e["involvedObject"]["name"] == "idle-train"
    ]
    assert [e["count"] for e in notified] == [1]

    ledger = Ledger.open(str(state))
    try:
        applied = [
            (e.step, e.reason)
            for e in ledger.all_events()
            if e.workload == IDLE and e.outcome is StepOutcome.APPLIED
        ]
    finally:
        ledger.close()
    assert [step for step, _ in applied] == [
        LadderStep.NOTIFY,
        LadderStep.ANNOTATE,
        LadderStep.RECLAIM,
    ]
    assert "found applied in the cluster after a restart" in applied[1][1]
    log_text = log.read_text(encoding="utf-8")
    assert "GpuIdle" in log_text or "ledger" in log_text
