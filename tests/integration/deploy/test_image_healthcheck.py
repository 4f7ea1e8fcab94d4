"""The image's health check against a real exporter process (simulated GPUs)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit.deploy.dockerfile import REPO, healthcheck_script

SCENARIO = REPO / "testbed" / "node" / "scenarios" / "shared-node.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _check(script: Path, cmdline: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), str(cmdline)], capture_output=True, text=True, check=False
    )


@pytest.mark.e2e
def test_healthcheck_follows_the_exporter(tmp_path: Path) -> None:
    script = tmp_path / "gpu-guardian-healthcheck"
    script.write_text(healthcheck_script(), encoding="utf-8")
    port = _free_port()
    flags = ["--listen-address=127.0.0.1", f"--port={port}"]
    # The health check reads the command line the image runs; the process serving that
    # port is the same exporter on a simulated node (the test bed's command line).
    image_argv = [sys.executable, "/opt/gpu-guardian/bin/guardian-exporter", "serve", *flags]
    cmdline = tmp_path / "cmdline"
    cmdline.write_bytes(b"\0".join(a.encode() for a in image_argv) + b"\0")
    assert _check(script, cmdline).returncode == 1  # nothing listens yet
    argv = [sys.executable, "-m", "testbed.node", "serve", f"--scenario={SCENARIO}", *flags]
    proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while (result := _check(script, cmdline)).returncode != 0:
            assert proc.poll() is None, "the exporter exited"
            assert time.monotonic() < deadline, result.stderr
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)
    failed = _check(script, cmdline)
    assert failed.returncode == 1
    assert f"127.0.0.1:{port}/healthz" in failed.stderr
