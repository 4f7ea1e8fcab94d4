"""The committed protobuf module is exactly what protoc generates from the committed .proto."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
PROTO = "guardian/adapters/_remote_write.proto"


@pytest.mark.parametrize("suffix", [".py", ".pyi"])
def test_regenerating_gives_the_committed_module(tmp_path: Path, suffix: str) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            ".",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            PROTO,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )
    name = f"guardian/adapters/_remote_write_pb2{suffix}"
    fresh = (tmp_path / name).read_text()
    committed = (ROOT / name).read_text()
    assert fresh == committed, (
        f"{name} is out of date with {PROTO} (or grpcio-tools changed); regenerate it with "
        f"`.venv/bin/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. {PROTO}`"
    )
