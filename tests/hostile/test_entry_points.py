"""The real entry points, ``python -m guardian`` and ``python -m exporter``, on hostile files.

Each runs as a fresh process with limits set through ``preexec_fn``. The CPU limit here
allows for the interpreter importing the whole CLI (over a second on a loaded machine);
the per-case 2 s budget of the loaders themselves is test_loaders.py's. The peak RSS is
the whole process's, as ``wait4`` reports it, taken by a small launcher that forks the
entry point: a process forked from pytest itself starts with pytest's RSS as its
high-water mark (Linux keeps it across exec), which grows with the number of tests
collected and has nothing to do with the entry point.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.inputs import billion_laughs, dev_zero, fifo, nested_block
from tests.hostile.runner import MEMORY_BYTES

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CPU_SECONDS = 10  # imports included
ADDRESS_SPACE = 1 << 30  # a billion laughs expanded needs several GiB
DEADLINE = 60.0
SERVE = ["serve", "--kubernetes", "off", "--port", "0"]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# argv: RSS file, program...; runs the program in a child of its own and writes that
# child's peak RSS (KiB), exiting with its status.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as rss:
    rss.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def _run(args: list[str], tmp_path: Path) -> tuple[int, str, int]:
    """(exit status, output, peak RSS in bytes) of ``python -m args``."""
    out, rss = tmp_path / "out.txt", tmp_path / "rss.txt"
    launcher = [sys.executable, "-c", LAUNCHER, str(rss), sys.executable]
    with out.open("wb") as sink:
        process = subprocess.Popen(
            [*launcher, "-m", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            preexec_fn=_limits,  # limits set before exec, inherited by the entry point
            start_new_session=True,  # so a hung one is killed with its launcher
        )
        try:
            code = process.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            code = process.wait()
    peak = int(rss.read_text()) * 1024 if rss.exists() else 0
    return code, out.read_text(errors="replace"), peak


@pytest.mark.parametrize(
    ("args", "make"),
    [
        (["guardian", "rules", "check", "{}"], billion_laughs),
        (["guardian", "eval", "--config", "{}"], fifo),
        (["guardian", "policies", "check", "{}"], nested_block),
        (["testbed.node", *SERVE, "--scenario", "{}"], billion_laughs),
        (["testbed.node", *SERVE, "--scenario", "{}"], dev_zero),
        (["guardian", "restore", "ml/Deployment/train", "--kubeconfig", "{}"], fifo),
        (["guardian", "status", "--state", "{}"], dev_zero),
    ],
    ids=[
        "rules-laughs",
        "config-fifo",
        "policies-nesting",
        "scenario-laughs",
        "scenario-zero",
        "kubeconfig-fifo",
        "state-zero",
    ],
)
def test_entry_point_exits_2_with_one_line(args: list[str], make: object, tmp_path: Path) -> None:
    assert callable(make)
    path = make(tmp_path)
    code, output, peak_rss = _run([str(path) if a == "{}" else a for a in args], tmp_path)

    assert code == 2, output
    lines = [line for line in output.splitlines() if line != "1 problem found"]
    assert len(lines) == 1, output
    assert str(path) in lines[0]
    assert "Traceback" not in output
    assert peak_rss < MEMORY_BYTES, f"peak RSS {peak_rss >> 20} MiB"
