"""The bounded reader: regular files only, bounded, UTF-8; every refusal one line naming
the file. For text (read_text), secrets, certificates and keys (read_secret, read_bytes,
check_file, pinned_path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian_common.errors import ConfigError
from guardian_common.files import (
    CERTIFICATE,
    MAX_FILE_BYTES,
    SECRET,
    FileReadError,
    UnsafeFileError,
    check_file,
    not_regular,
    pinned_path,
    read_bytes,
    read_regular_file,
    read_secret,
    read_text,
)


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


@pytest.fixture(
    params=[
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file (a character device)"),
        (lambda p: p.mkdir(), "not a regular file (a directory)"),
    ],
    ids=["fifo", "dev-zero", "directory"],
)
def unsafe(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    make, reason = request.param
    path = tmp_path / "f"
    make(path)
    return path, reason


def test_every_reader_refuses_what_is_not_a_regular_file(unsafe: tuple[Path, str]) -> None:
    path, reason = unsafe
    calls = [
        lambda: read_secret(path),
        lambda: read_bytes(path, CERTIFICATE),
        lambda: check_file(path, CERTIFICATE, field="web.tls_cert_file"),
        lambda: pinned_path(path, CERTIFICATE).__enter__(),
    ]
    for call in calls:
        with pytest.raises(FileReadError) as info:
            call()
        assert (info.value.path, info.value.reason) == (str(path), reason)


def test_a_secret_is_stripped_bounded_and_never_shown(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"  s3cret\n")
    assert read_secret(path) == "s3cret"
    path.write_bytes(b"x" * SECRET.max_bytes)
    assert len(read_secret(path)) == SECRET.max_bytes
    path.write_bytes(b"x" * (SECRET.max_bytes + 1))
    with pytest.raises(FileReadError, match="the limit is 65536 bytes"):
        read_secret(path)
    path.write_bytes(b"s3cr\xe9t\n")
    with pytest.raises(FileReadError) as info:
        read_secret(path, "bearer token file")
    assert str(info.value) == f"{path}: bearer token file is not UTF-8 text"


def test_a_missing_file_says_what_it_was_for(tmp_path: Path) -> None:
    with pytest.raises(FileReadError) as info:
        check_file(tmp_path / "nope", CERTIFICATE, field="remote_write.tls.ca_file")
    assert str(info.value) == (
        f"{tmp_path / 'nope'}: remote_write.tls.ca_file: "
        "cannot read certificate or key: No such file or directory"
    )


def test_a_pinned_path_is_the_file_checked_even_if_the_name_is_swapped(tmp_path: Path) -> None:
    path = tmp_path / "cert.pem"
    path.write_text("the certificate\n", encoding="utf-8")
    with pinned_path(path, CERTIFICATE) as pinned:
        path.unlink()
        os.mkfifo(path)  # what a library opening the name now would block on
        with open(pinned, encoding="utf-8") as opened:
            assert opened.read() == "the certificate\n"


def test_not_regular_names_the_kind() -> None:
    assert not_regular(os.stat("/dev/null").st_mode) == "not a regular file (a character device)"
    assert not_regular(os.stat(__file__).st_mode) is None
