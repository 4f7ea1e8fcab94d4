"""`the demo (`make demo`)`: start the stack, play the script, check the outcomes, clean up."""

from __future__ import annotations

import logging
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

import guardian
from guardian_common.errors import GuardianError
from guardian_common.words import plural
from testbed.demo.fleet import NODES, WORKLOADS
from testbed.demo.outcomes import check_all
from testbed.demo.profile import DemoProfile
from testbed.demo.replay import check_replay, in_cluster_time, replay_history
from testbed.demo.script import DemoAborted, DemoScript
from testbed.demo.stack import DemoOptions, DemoStack
from testbed.demo.timeline import Timeline

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class DemoRequest:
    """What the command line asked for."""

    timeout: float = 180.0  # seconds for the whole demo
    workdir: Path | None = None  # None: a temporary directory, removed at the end
    keep_workdir: bool = False
    rules_dir: Path | None = None  # None: the shipped rules/guardian pack
    factor: int = 60
    slack_token: str | None = None
    slack_channel: str | None = None
    pid_file: Path | None = None


class _Terminated(Exception):
    """SIGTERM arrived: clean up as for Ctrl-C."""


def default_rules_dir() -> Path:
    """The shipped pack next to the package (a source checkout or an editable install)."""
    return Path(guardian.__file__).resolve().parent.parent / "rules" / "guardian"


@contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _intro(timeline: Timeline) -> None:
    timeline.plain(
        "GPU Guardian demo: the whole loop on a simulated fleet, no cluster, GPU or Slack."
    )
    timeline.plain(f"Fleet: {plural(len(NODES), 'node')} x 4 GPUs. Workloads:")
    for w in WORKLOADS:
        timeline.plain(f"  - {w.ref} ({plural(w.replicas, 'pod')}): {w.role}")


def run_demo(request: DemoRequest, out: TextIO) -> int:
    monotonic = time.monotonic
    timeline = Timeline(monotonic, out)
    deadline = monotonic() + request.timeout
    workdir = request.workdir or Path(tempfile.mkdtemp(prefix="guardian-demo-"))
    keep = request.keep_workdir or request.workdir is not None
    if request.pid_file is not None:
        request.pid_file.write_text("", encoding="utf-8")
    options = DemoOptions(
        rules_dir=request.rules_dir or default_rules_dir(),
        workdir=workdir,
        profile=DemoProfile(factor=request.factor),
        slack_token=request.slack_token,
        slack_channel=request.slack_channel,
        pid_file=request.pid_file,
    )
    stack = DemoStack(options, timeline)
    _intro(timeline)
    finished = False
    script: DemoScript | None = None
    replay = None
    try:
        with _sigterm_as_exception():
            timeline.heading("starting")
            started = time.time()
            stack.start()
            timeline.heading("timeline")
            script = DemoScript(stack, timeline, deadline)
            finished = script.run()
            if finished and stack.procs and stack.config_path and stack.kubeconfig:
                replay = replay_history(
                    stack.procs,
                    timeline,
                    config=stack.config_path,
                    kubeconfig=stack.kubeconfig,
                    since=started,
                    until=time.time(),
                    policies=stack.policy_file,
                )
    except (KeyboardInterrupt, _Terminated):
        timeline.plain("\ninterrupted: stopping everything the demo started")
        stack.close(keep_workdir=keep)
        return EXIT_INTERRUPTED
    except (GuardianError, DemoAborted) as exc:
        timeline.plain(f"\ndemo failed: {exc}")
        stack.close(keep_workdir=True)
        timeline.plain(f"logs kept in {workdir}/logs")
        return EXIT_FAILED
    except BaseException:
        stack.close(keep_workdir=True)
        raise
    outcomes = check_all(script.evidence) if script is not None else []
    if replay is not None:
        outcomes.append(check_replay(replay))
    timeline.heading(f"expected outcomes ({timeline.elapsed:.0f}s)")
    for outcome in outcomes:
        timeline.plain(outcome.line())
    failed = not finished or any(o.ok is False for o in outcomes)
    stack.close(keep_workdir=keep or failed)
    if failed:
        timeline.plain(f"\nFAILED: see the outcomes above; logs kept in {workdir}/logs")
        return EXIT_FAILED
    if replay is not None:
        timeline.heading("what it saved, in cluster time")
        factor = request.factor
        for line in in_cluster_time(replay, factor, timeline.elapsed):
            timeline.plain(line)
    timeline.plain("\nOK: every expected outcome happened; everything the demo started is stopped.")
    return EXIT_OK
