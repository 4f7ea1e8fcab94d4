"""A real server binary run on loopback (Prometheus, Alertmanager): spawned so that it
dies with us, waited for until ready, stopped, and its log's tail for error messages."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import signal
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
LOG_TAIL_BYTES = 4000


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the test process is killed, the
    # kernel sends the server SIGTERM instead of leaving it behind.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(argv: Sequence[str], workdir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session in ``workdir``, output appended to ``log_path``."""
    with log_path.open("ab") as log:
        return subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def log_tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-LOG_TAIL_BYTES:].decode("utf-8", "replace")


def wait_ready(
    name: str,
    url: str,
    process: subprocess.Popen[bytes],
    log_path: Path,
    timeout: float,
    error: type[GuardianError],
) -> None:
    """Poll ``url``/-/ready until 200; ``error`` with the log's tail if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise error(f"{name} exited with {process.returncode}:\n{log_tail(log_path)}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{url}/-/ready", timeout=1.0) as response,  # noqa: S310
        ):
            if response.status == 200:
                return
        time.sleep(0.05)
    raise error(f"{name} not ready after {timeout}s:\n{log_tail(log_path)}")


def stop_process(name: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds. Idempotent."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        logger.warning("%s pid %s ignored SIGTERM; killing it", name, process.pid)
        process.kill()
        process.wait(timeout=timeout)
