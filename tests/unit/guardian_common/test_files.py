"""read_text: regular files only, bounded, UTF-8; every refusal one line naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian_common.errors import ConfigError
from guardian_common.files import MAX_FILE_BYTES, UnsafeFileError, read_regular_file, read_text


def test_reads_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("name: café\n", encoding="utf-8")
    assert read_text(path) == "name: café\n"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file (a character device)"),
        (lambda p: p.mkdir(), "not a regular file (a directory)"),
    ],
    ids=["fifo", "dev-zero", "directory"],
)
def test_only_regular_files_and_never_blocks(tmp_path: Path, make: object, reason: str) -> None:
    path = tmp_path / "x.yaml"
    assert callable(make)
    make(path)
    with pytest.raises(ConfigError) as info:
        read_text(path)
    assert str(info.value) == f"{path}: {reason}"


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as out:
        out.truncate(8 << 30)  # sparse: reading it would take minutes
    with pytest.raises(ConfigError, match=r"too large \(8589934592 bytes, the limit is 1048576"):
        read_text(path)


def test_the_limit_is_exact_and_configurable(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"#" * MAX_FILE_BYTES)
    assert len(read_text(path)) == MAX_FILE_BYTES
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ConfigError, match="too large"):
        read_text(path)
    assert len(read_text(path, max_bytes=MAX_FILE_BYTES + 1)) == MAX_FILE_BYTES + 1


def test_a_file_reporting_size_zero_is_still_bounded() -> None:
    # procfs and other pseudo files report st_size 0; the read itself stops at the limit.
    with pytest.raises(UnsafeFileError, match="too large"):
        read_regular_file("/proc/self/maps", max_bytes=16)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a: 1\nb: caf\xe9\n", ":2: not UTF-8 text: byte 0xe9 at column 7"),
        (b"\xff", ":1: not UTF-8 text: byte 0xff at column 1"),
        (b"a: 1\n\x00\x01\x02", ":2: binary data (a NUL byte), not a text file"),
    ],
)
def test_binary_and_non_utf8_name_the_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        read_text(path)
    assert str(info.value) == f"{path}{message}"


def test_missing_file_says_what_it_was_for(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        read_text(tmp_path / "nope.yaml", what="config")
    assert (
        str(info.value)
        == f"{tmp_path / 'nope.yaml'}: cannot read config: No such file or directory"
    )
