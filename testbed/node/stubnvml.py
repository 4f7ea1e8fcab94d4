"""Build the stub ``libnvidia-ml.so.1`` and write the text scenarios that drive it."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

from exporter.model.errors import ExporterError

SCENARIO_ENV = "GUARDIAN_STUB_NVML_SCENARIO"
LIBRARY_NAME = "libnvidia-ml.so.1"


class StubBuildError(ExporterError):
    """gcc is missing or failed; the message says which."""


def build_stub(out_dir: Path, compiler: str = "gcc") -> Path:
    """Compile the stub into ``out_dir/libnvidia-ml.so.1`` and return its path."""
    cc = shutil.which(compiler)
    if cc is None:
        raise StubBuildError(f"{compiler} not found on PATH; cannot build the stub NVML library")
    source = resources.files("testbed.node").joinpath("stubnvml.c")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / LIBRARY_NAME
    with resources.as_file(source) as src:
        result = subprocess.run(  # noqa: S603 - fixed argv, compiler found on PATH
            [
                cc,
                "-shared",
                "-fPIC",
                "-O2",
                "-Wall",
                "-Werror",
                f"-Wl,-soname,{LIBRARY_NAME}",
                "-o",
                str(target),
                str(src),
                "-lpthread",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise StubBuildError(f"building the stub NVML library failed:\n{result.stderr}")
    return target
