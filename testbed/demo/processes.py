"""The demo's child processes: started so that none outlives the demo.

Each child asks the kernel to end it when the demo dies (PR_SET_PDEATHSIG), so even a
``kill -9`` of the demo leaves nothing behind; normally :meth:`ProcessGroup.stop_all`
ends them (SIGTERM, then SIGKILL). Their PIDs can be written to a file for whoever
checks that nothing is left (the e2e test).

The child sets the signal itself, in a small launcher, rather than in a
``preexec_fn``: the demo process runs gRPC servers (the fake kubelets), and running
Python between fork and exec in a process with gRPC threads can abort the child.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

# argv: <parent pid> <module> <args...>. PR_SET_PDEATHSIG = 1; if the parent is already
# gone (the demo died before prctl), exit instead of running orphaned.
_LAUNCHER = """\
import ctypes, os, runpy, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, limit: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")
        except OSError:
            return ""


@dataclass
class ProcessGroup:
    """Every process the demo started, in start order."""

    log_dir: Path
    pid_file: Path | None = None
    children: list[Child] = field(default_factory=list)

    def python(
        self, name: str, module_args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> Child:
        """Start ``python -m <module_args...>`` with this interpreter."""
        launcher = [sys.executable, "-c", _LAUNCHER, str(os.getpid())]
        return self.start(name, [*launcher, *module_args], env)

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                # Own session: a terminal's Ctrl-C reaches only the demo, which then
                # stops each child once, with SIGTERM.
                start_new_session=True,
            )
        child = Child(name, process, log_path)
        self.children.append(child)
        self.adopt(process.pid)
        logger.debug("started %s: pid %s", name, process.pid)
        return child

    def run(self, name: str, module_args: Sequence[str], timeout: float) -> tuple[int, str]:
        """Run ``python -m <module_args...>`` to completion; its exit status and output."""
        child = self.python(name, module_args)
        try:
            code = child.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(child)
            code = -9
        return code, child.log_tail()

    def adopt(self, pid: int) -> None:
        """Record a PID started elsewhere (Prometheus) in the PID file."""
        if self.pid_file is not None:
            with self.pid_file.open("a", encoding="utf-8") as out:
                out.write(f"{pid}\n")

    def kill(self, child: Child) -> None:
        """SIGKILL, as a crash would."""
        if child.running():
            child.process.kill()
            child.process.wait(timeout=10)

    def stop(self, child: Child, timeout: float = 30.0) -> None:
        """SIGTERM, and wait for it to finish (SIGKILL if it does not)."""
        if child.running():
            child.process.terminate()
            try:
                child.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                logger.warning("%s (pid %s) ignored SIGTERM; killing it", child.name, child.pid)
                self.kill(child)

    def stop_all(self, timeout: float = 10.0) -> None:
        """SIGTERM to every child still running (newest first), then SIGKILL stragglers."""
        for child in reversed(self.children):
            if child.running():
                child.process.terminate()
        deadline = time.monotonic() + timeout
        for child in reversed(self.children):
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("%s (pid %s) ignored SIGTERM; killing it", child.name, child.pid)
                child.process.kill()
                child.process.wait(timeout=timeout)


def wait_http_ok(url: str, timeout: float, alive: Child | None = None) -> bool:
    """Poll ``url`` until it answers 200; False on timeout or when ``alive`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive.running():
            return False
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:  # noqa: S310 - loopback
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False
