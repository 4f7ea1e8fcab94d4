"""the demo (`make demo`) end to end, as CI's smoke test runs it: it succeeds, and whatever way it
ends (success, deadline, Ctrl-C) no process it started is left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

OUTCOMES = 14  # twelve live (shared GPU, evidence pictures, Keep 4h), the failover, the replay


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and _alive(int(entry.name)):
            found.append(f"{entry.name}: {cmdline}")
    return found


def _assert_nothing_left(workdir: Path, pid_file: Path, output: str) -> None:
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) >= 3, pids  # at least Prometheus and the two exporters were started
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    assert [p for p in pids if _alive(p)] == []
    assert _processes_mentioning(str(workdir)) == []
    sockets = re.search(r"fake kubelets .* in (/tmp/gg-demo-\S+)", output)
    assert sockets is not None, output
    assert not Path(sockets.group(1)).exists()


def _demo(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testbed.demo",
            "--workdir",
            str(tmp_path / "demo"),
            "--pid-file",
            str(tmp_path / "pids"),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "SLACK_BOT_TOKEN"},
    )


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_demo_succeeds_and_leaves_nothing_running(tmp_path: Path) -> None:
    demo = _demo(tmp_path)
    output, _ = demo.communicate(timeout=280)

    assert demo.returncode == 0, output
    assert output.count("  ✓ ") == OUTCOMES, output
    assert "OK: every expected outcome happened" in output
    for event in (
        "first scrape",
        "GpuIdle firing: research/notebook-alice",
        "killed the leader, replica a",
        "took the Lease over",
        "reclaim applied on research/Deployment/notebook-alice (original replicas 1)",
        "killed the exporter of node2",
        "restore applied on research/Deployment/notebook-alice",
        "GpuMemoryUnderutilized firing: serving/bert-inference",
    ):
        assert event in output
    _assert_nothing_left(tmp_path / "demo", tmp_path / "pids", output)


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_ctrl_c_stops_everything(tmp_path: Path) -> None:
    demo = _demo(tmp_path)
    assert demo.stdout is not None
    seen = []
    for line in demo.stdout:
        seen.append(line)
        if "== timeline" in line:
            break
    time.sleep(2)
    demo.send_signal(signal.SIGINT)
    rest, _ = demo.communicate(timeout=60)
    output = "".join(seen) + rest

    assert demo.returncode == 130, output
    assert "interrupted: stopping everything" in output
    _assert_nothing_left(tmp_path / "demo", tmp_path / "pids", output)


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_a_story_that_cannot_finish_fails_and_still_cleans_up(tmp_path: Path) -> None:
    demo = _demo(tmp_path, "--timeout", "25")
    output, _ = demo.communicate(timeout=100)

    assert demo.returncode == 1, output
    assert "deadline reached" in output
    assert "  ✗ " in output
    assert "FAILED" in output
    _assert_nothing_left(tmp_path / "demo", tmp_path / "pids", output)
