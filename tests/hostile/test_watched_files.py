"""A running ``guardian run`` whose watched rule folder gains a FIFO and a ``/dev/zero``
symlink: the reload that follows is refused (logged), the last good rules stay in force,
the process stays small and responsive (SIGHUP, a later valid edit, SIGTERM).

Before the watcher read files the bounded way, the ``/dev/zero`` symlink took 82 MB and
then 3.9 GB within 2 s, and the FIFO blocked the poll: later edits and SIGHUP were never
applied and SIGTERM no longer stopped the process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.runner import MEMORY_BYTES

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 15.0
RULES = "groups:\n  - name: {name}\n    rules:\n      - alert: A\n        expr: vector(1)\n"


class Controller:
    """``python -m guardian run`` with its log in a file."""

    def __init__(self, config: Path, log: Path) -> None:
        self.log = log
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "guardian", "run", "--config", str(config)],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                start_new_session=True,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: str, after: int = 0) -> re.Match[str]:
        """The first match of ``pattern`` in the log from offset ``after``."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            found = re.compile(pattern).search(self.text(), after)
            if found is not None:
                return found
            assert self.process.poll() is None, self.text()
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} within {DEADLINE}s:\n{self.text()}")

    def peak_rss(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        (kib,) = re.findall(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
        return int(kib) * 1024

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _metric(url: str, name: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:  # noqa: S310
        body = response.read().decode()
    (value,) = re.findall(rf"^{name} (\S+)$", body, re.MULTILINE)
    return float(value)


def _when(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_fifo_and_dev_zero_in_the_rule_folder(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "a.yaml").write_text(RULES.format(name="a"), encoding="utf-8")
    config = tmp_path / "guardian.yaml"
    config.write_text(
        "prometheus: {url: 'http://127.0.0.1:9'}\n"
        "rule_files: [rules/*.yaml]\n"
        "evaluation_interval: 1h\n"
        "state_path: ':memory:'\n"
        "listen_address: 127.0.0.1:0\n"
        "reload: {poll_interval: 100ms}\n"
        "restore: {from_prometheus: false}\n",
        encoding="utf-8",
    )
    guardian = Controller(config, tmp_path / "log.txt")
    try:
        url = guardian.wait_for(r"listening on (http://\S+) ").group(1)

        os.mkfifo(rules / "fifo.yaml")
        (rules / "zero.yaml").symlink_to("/dev/zero")
        refused = guardian.wait_for(r"reload: keeping the running config")
        log = guardian.text()
        assert f"{rules / 'fifo.yaml'}: not a regular file (a FIFO)" in log
        assert f"{rules / 'zero.yaml'}: not a regular file (a character device)" in log
        assert _metric(url, "guardian_config_last_reload_successful") == 0

        guardian.process.send_signal(signal.SIGHUP)  # applied, and refused again
        guardian.wait_for(r"reload: keeping the running config", refused.end())

        (rules / "fifo.yaml").unlink()
        (rules / "zero.yaml").unlink()
        (rules / "b.yaml").write_text(RULES.format(name="b"), encoding="utf-8")
        guardian.wait_for(r"reload: 2 rule group\(s\) loaded")
        _when(lambda: _metric(url, "guardian_config_last_reload_successful") == 1)
        peak = guardian.peak_rss()

        guardian.process.send_signal(signal.SIGTERM)
        assert guardian.process.wait(DEADLINE) == 0
    finally:
        guardian.stop()
    assert "Traceback" not in guardian.text()
    # The whole controller: about 70 MiB here (its imports, threads, the HTTP server);
    # reading /dev/zero once took 3.9 GB.
    assert peak < 2 * MEMORY_BYTES, f"peak RSS {peak >> 20} MiB"
