"""Reading an input file safely: regular files only, bounded in size, UTF-8 text.

Every file either program is given is read here: config, rule, policy, test, scenario,
users and vGPU files (:func:`read_text`); secrets such as tokens and passwords
(:func:`read_secret`); certificates and keys (:func:`pinned_path`, for libraries that
take a path); kubeconfigs (:mod:`guardian_common.kubeconfig`); the state database is
checked with :func:`not_regular` before SQLite opens it. So a FIFO cannot hang a
load, ``/dev/zero`` cannot fill the memory, and a binary or mis-encoded file is one line
naming the file and line, not a traceback.

Each kind of file has its limit (:class:`FileKind`): a secret 64 KiB, a certificate or
key 1 MiB, a kubeconfig 4 MiB, every other input :data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FileKind:
    """What a file is for (said in errors) and the most bytes it may have."""

    what: str
    max_bytes: int


SECRET = FileKind("secret", 64 << 10)
"""A token, password or signing secret: 64 KiB, far beyond any real one (a service
account token is about 1 KiB)."""
CERTIFICATE = FileKind("certificate or key", MAX_FILE_BYTES)
"""A PEM certificate (chain), key or CA bundle: 1 MiB, what a Secret holds (Mozilla's
whole CA bundle is about 220 KiB)."""
KUBECONFIG = FileKind("kubeconfig", 4 << 20)
"""4 MiB: a kubeconfig with inline certificates for hundreds of clusters."""


class UnsafeFileError(OSError):
    """The path is not a regular file, or is larger than allowed: reading it could hang
    (a FIFO) or never end (``/dev/zero``)."""


class FileReadError(ConfigError):
    """A file that cannot be read as what it is for: missing, unreadable, not a regular
    file, too large, or not text. Permanent: reading it again unchanged fails the same
    way. ``path`` names it and ``reason`` says why, on one line."""


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES, what: str = "") -> str:
    """The UTF-8 content of the regular file ``path``. Raises FileReadError (one line,
    naming the file, and ``what`` it is for) when it cannot be read, is not a regular
    file, is larger than ``max_bytes``, holds a NUL byte, or is not UTF-8."""
    source = str(path)
    return decode_text(_read(source, max_bytes, what), source)


def read_bytes(path: str | Path, kind: FileKind) -> bytes:
    """The bytes of the regular file ``path``, at most ``kind.max_bytes`` of them.
    Raises FileReadError."""
    return _read(str(path), kind.max_bytes, kind.what)


def read_secret(path: str | Path, what: str = SECRET.what) -> str:
    """A token, password or secret kept in a file: its UTF-8 text without surrounding
    whitespace (the trailing newline an editor or ``echo`` adds). At most
    :data:`SECRET`'s size. Raises FileReadError; the message never shows the content."""
    source = str(path)
    data = _read(source, SECRET.max_bytes, what)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:  # no byte, line or column: they would show part of it
        raise FileReadError(f"{what} is not UTF-8 text", path=source) from None


def check_file(path: str | Path, kind: FileKind, *, field: str | None = None) -> None:
    """Raise FileReadError (naming ``field`` too, when given) unless ``path`` is a
    readable regular file of at most ``kind.max_bytes``. Opens it without reading: cheap
    enough to run before each use of a path a library opens itself."""
    os.close(_open_checked(str(path), kind, field))


@contextmanager
def pinned_path(path: str | Path, kind: FileKind) -> Iterator[str]:
    """A path for a library that opens files itself (``ssl``'s ``load_cert_chain``),
    naming the regular file ``path`` as checked now: ``/proc/self/fd/N`` of a descriptor
    held open until the block ends, so the file the library reads is the one checked
    (a FIFO or ``/dev/zero`` swapped in between cannot reach it). Without ``/proc``, the
    checked path itself. Raises FileReadError."""
    source = str(path)
    fd = _open_checked(source, kind)
    try:
        proc = f"/proc/self/fd/{fd}"
        yield proc if os.path.exists(proc) else source
    finally:
        os.close(fd)


def _open_checked(source: str, kind: FileKind, field: str | None = None) -> int:
    try:
        return _open_regular(source, kind.max_bytes)
    except UnsafeFileError as exc:
        raise FileReadError(str(exc), path=source, field=field) from None
    except OSError as exc:
        raise FileReadError(_cannot(kind.what, exc), path=source, field=field) from None


def _read(source: str, max_bytes: int, what: str) -> bytes:
    try:
        return read_regular_file(source, max_bytes)
    except UnsafeFileError as exc:
        raise FileReadError(str(exc), path=source) from None
    except OSError as exc:
        raise FileReadError(_cannot(what, exc), path=source) from None


def _cannot(what: str, exc: OSError) -> str:
    cannot = f"cannot read {what}" if what else "cannot read"
    return f"{cannot}: {exc.strerror or exc}"


def read_regular_file(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them. Raises
    UnsafeFileError for anything else, OSError when it cannot be opened or read.

    Works for procfs files too, which are regular but report a size of 0.
    """
    fd = _open_regular(path, max_bytes)
    try:
        data = _read_at_most(fd, max_bytes + 1)  # the size can change after fstat
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnsafeFileError(_too_large(None, max_bytes))
    return data


def _open_regular(path: str, max_bytes: int) -> int:
    """A descriptor of the regular file ``path`` (symlinks followed) of at most
    ``max_bytes``; UnsafeFileError for anything else."""
    # Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        refused = not_regular(info.st_mode)
        if refused is not None:
            raise UnsafeFileError(refused)
        if info.st_size > max_bytes:
            raise UnsafeFileError(_too_large(info.st_size, max_bytes))
    except BaseException:
        os.close(fd)
        raise
    return fd


def not_regular(mode: int) -> str | None:
    """Why a file of ``mode`` (``st_mode``) is refused, ``not a regular file (a FIFO)``;
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text; a NUL byte (binary data) or invalid UTF-8 is a FileReadError
    at the line where it occurs."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise FileReadError(
            "binary data (a NUL byte), not a text file", path=source, line=_line_at(data, nul)
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise FileReadError(
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
