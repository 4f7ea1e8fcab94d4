"""Reading an input file safely: regular files only, bounded in size, UTF-8 text.

Every file either program is given (config, rule, policy, test, scenario, users and vGPU
files) is read here, so a FIFO cannot hang a load, ``/dev/zero`` cannot fill the memory,
and a binary or mis-encoded file is one line naming the file and line, not a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from guardian_common.errors import ConfigError

MAX_FILE_BYTES = 1 << 20
"""1 MiB: the most a ConfigMap or Secret can hold, so any file mounted from one fits, and
a hundred times the largest shipped rule file."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnsafeFileError(OSError):
    """The path is not a regular file, or is larger than allowed: reading it could hang
    (a FIFO) or never end (``/dev/zero``)."""


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES, what: str = "") -> str:
    """The UTF-8 content of the regular file ``path``. Raises ConfigError (one line,
    naming the file, and ``what`` it is for) when it cannot be read, is not a regular
    file, is larger than ``max_bytes``, holds a NUL byte, or is not UTF-8."""
    source = str(path)
    try:
        data = read_regular_file(source, max_bytes)
    except UnsafeFileError as exc:
        raise ConfigError(str(exc), path=source) from None
    except OSError as exc:
        cannot = f"cannot read {what}" if what else "cannot read"
        raise ConfigError(f"{cannot}: {exc.strerror or exc}", path=source) from None
    return decode_text(data, source)


def read_regular_file(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them. Raises
    UnsafeFileError for anything else, OSError when it cannot be opened or read.

    Works for procfs files too, which are regular but report a size of 0.
    """
    # Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
            raise UnsafeFileError(f"not a regular file ({kind})")
        if info.st_size > max_bytes:
            raise UnsafeFileError(_too_large(info.st_size, max_bytes))
        data = _read_at_most(fd, max_bytes + 1)  # the size can change after fstat
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnsafeFileError(_too_large(None, max_bytes))
    return data


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text; a NUL byte (binary data) or invalid UTF-8 is a ConfigError
    at the line where it occurs."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(
            "binary data (a NUL byte), not a text file", path=source, line=_line_at(data, nul)
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise ConfigError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column}",
            path=source,
            line=_line_at(data, exc.start),
        ) from None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _too_large(size: int | None, limit: int) -> str:
    found = f"{size} bytes, " if size is not None else ""
    return f"too large ({found}the limit is {limit} bytes)"


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1
