"""Results of CLI cases run under limits by runner.py, one runner process per program."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.hostile.runner import CPU_SECONDS, CRASHED, MEMORY_BYTES

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Outcome:
    argv: list[str]
    code: int
    stdout: str
    stderr: str
    cpu_seconds: float
    max_rss_bytes: int

    @property
    def lines(self) -> list[str]:
        return (self.stdout + self.stderr).splitlines()

    def limits_held(self) -> None:
        """Fail with the reason if the case ran into a limit or crashed."""
        why = {
            -signal.SIGXCPU: f"used more than {CPU_SECONDS} s of CPU",
            -signal.SIGKILL: f"used more than {CPU_SECONDS + 1} s of CPU",
            -signal.SIGALRM: "hung (blocked without using CPU)",
            CRASHED: "crashed (a traceback), perhaps MemoryError at the 100 MiB limit",
        }.get(self.code)
        assert why is None, f"{self.argv}: {why}\n{self.stdout}{self.stderr}"
        assert self.cpu_seconds < CPU_SECONDS
        assert self.max_rss_bytes < MEMORY_BYTES, f"peak RSS {self.max_rss_bytes >> 20} MiB"
        assert "Traceback" not in self.stdout + self.stderr


class Runner:
    def __init__(self, program: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.hostile.runner", program],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, argv: list[str]) -> Outcome:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(argv) + "\n")
        stdin.flush()
        result: dict[str, Any] = json.loads(stdout.readline())
        return Outcome(argv=argv, **result)

    def close(self) -> None:
        stdin, stdout = self._pipes()
        stdin.close()
        self.process.wait(timeout=30)
        stdout.close()

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        return stdin, stdout


Run = Callable[[str, list[str]], Outcome]
