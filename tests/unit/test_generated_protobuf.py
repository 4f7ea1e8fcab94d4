"""Each committed protobuf/gRPC module is what grpcio-tools makes of its committed .proto."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = [
    ("guardian/adapters/_remote_write.proto", ("_pb2.py", "_pb2.pyi")),
    ("exporter/adapters/podresources/_api.proto", ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")),
]


@pytest.mark.parametrize(("proto", "suffixes"), GENERATED)
def test_regenerating_gives_the_committed_modules(
    tmp_path: Path, proto: str, suffixes: tuple[str, ...]
) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            ".",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            proto,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )
    stem = proto.removesuffix(".proto")
    for suffix in suffixes:
        name = f"{stem}{suffix}"
        assert (tmp_path / name).read_text() == (ROOT / name).read_text(), (
            f"{name} is out of date with {proto} (or grpcio-tools changed); regenerate with "
            f"`.venv/bin/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. "
            f"--grpc_python_out=. {proto}`"
        )
