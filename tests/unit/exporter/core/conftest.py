"""Fixtures for the exporter core: the stub NVML library loaded in-process, scenario helpers."""

from __future__ import annotations

import ctypes
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed.node.stubnvml import SCENARIO_ENV, build_stub


@pytest.fixture(scope="session")
def stub_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed, so the stub libnvidia-ml.so.1 cannot be built")
    return build_stub(tmp_path_factory.mktemp("stubnvml"))


@pytest.fixture(scope="session")
def _stub_loaded(stub_library: Path) -> Path:
    # Loaded once under its soname, so pynvml's own CDLL("libnvidia-ml.so.1") finds this one.
    ctypes.CDLL(str(stub_library))
    return stub_library


@pytest.fixture
def stub_nvml(
    _stub_loaded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], Path]]:
    """Write the stub's scenario text; the stub re-reads it at init and when it changes."""
    path = tmp_path / "stub-scenario.txt"
    path.write_text("")
    monkeypatch.setenv(SCENARIO_ENV, str(path))

    def write(text: str) -> Path:
        path.write_text(text)
        return path

    return write


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
