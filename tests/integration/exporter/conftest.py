"""Run `guardian-exporter serve` as a real process and scrape it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testbed.node.stubnvml import build_stub

EXPORTER = str(Path(sys.executable).parent / "guardian-exporter")
# The same command line on a simulated node (`--scenario FILE`), from the test bed.
SIMULATED_NODE = [sys.executable, "-m", "testbed.node"]


@pytest.fixture(scope="session")
def stub_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed, so the stub libnvidia-ml.so.1 cannot be built")
    return build_stub(tmp_path_factory.mktemp("stubnvml")).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Series = dict[str, list[tuple[dict[str, str], float]]]


@dataclass
class Running:
    proc: subprocess.Popen[str]
    url: str

    def get(self, path: str, timeout: float = 10) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:  # noqa: S310
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def series(self) -> Series:
        status, body = self.get("/metrics")
        assert status == 200, body
        out: Series = {}
        for family in text_string_to_metric_families(body):
            for s in family.samples:
                out.setdefault(s.name, []).append((s.labels, s.value))
        return out

    def wait_for(self, check: Callable[[Series], bool], timeout: float = 20) -> Series:
        deadline = time.monotonic() + timeout
        while True:
            got = self.series()
            if check(got):
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout} s; last scrape: {got}")
            time.sleep(0.2)


@pytest.fixture
def exporter_process() -> Iterator[Callable[..., Running]]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Running:
        port = free_port()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GUARDIAN_")}
        full_env.update(env or {})
        program = SIMULATED_NODE if "--scenario" in args else [EXPORTER]
        proc = subprocess.Popen(
            [*program, "serve", "--listen-address", "127.0.0.1", "--port", str(port), *args],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(proc)
        running = Running(proc, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"exporter exited: {proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if running.get("/readyz", timeout=2)[0] == 200:
                    return running
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("exporter did not become ready")
            time.sleep(0.1)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()
