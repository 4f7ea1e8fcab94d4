"""The real entry points, ``python -m guardian`` and ``python -m exporter``, on hostile files.

Each runs as a fresh process with limits set through ``preexec_fn``. The CPU limit here
allows for the interpreter importing the whole CLI (over a second on a loaded machine);
the per-case 2 s budget of the loaders themselves is test_loaders.py's. The peak RSS is
the whole process's, as ``wait4`` reports it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
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


def _run(args: list[str], tmp_path: Path) -> tuple[int, str, int]:
    """(exit status, output, peak RSS in bytes) of ``python -m args``."""
    out = tmp_path / "out.txt"
    with out.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            preexec_fn=_limits,  # limits set in the child, before exec
        )
        deadline = time.monotonic() + DEADLINE
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, out.read_text(errors="replace"), usage.ru_maxrss * 1024


@pytest.mark.parametrize(
    ("args", "make"),
    [
        (["guardian", "rules", "check", "{}"], billion_laughs),
        (["guardian", "eval", "--config", "{}"], fifo),
        (["guardian", "policies", "check", "{}"], nested_block),
        (["testbed.node", *SERVE, "--scenario", "{}"], billion_laughs),
        (["testbed.node", *SERVE, "--scenario", "{}"], dev_zero),
    ],
    ids=["rules-laughs", "config-fifo", "policies-nesting", "scenario-laughs", "scenario-zero"],
)
def test_entry_point_exits_2_with_one_line(args: list[str], make: object, tmp_path: Path) -> None:
    assert callable(make)
    path = make(tmp_path)
    code, output, peak_rss = _run([str(path) if a == "{}" else a for a in args], tmp_path)

    assert code == 2, output
    lines = [line for line in output.splitlines() if line != "1 problem(s) found"]
    assert len(lines) == 1, output
    assert str(path) in lines[0]
    assert "Traceback" not in output
    assert peak_rss < MEMORY_BYTES, f"peak RSS {peak_rss >> 20} MiB"
