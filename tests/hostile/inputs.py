"""Hostile input files, each written into a directory and returned as a path.

Each case also names a phrase the one-line error must contain, so a test cannot pass on a
different error than the one the input provokes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from guardian_common.files import MAX_FILE_BYTES


@dataclass(frozen=True)
class Hostile:
    name: str
    make: Callable[[Path], Path]
    expect: str  # in the error line


def _write(directory: Path, data: bytes | str) -> Path:
    path = directory / "input.yaml"
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def billion_laughs(directory: Path) -> Path:
    """Ten levels of ten aliases each: 10^9 strings once expanded."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        prev, cur = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return _write(directory, "\n".join(lines) + "\n")


def non_utf8(directory: Path) -> Path:
    return _write(directory, b"groups:\n  - name: caf\xe9\n")  # Latin-1


def binary(directory: Path) -> Path:
    return _write(directory, random.Random(14).randbytes(64 << 10))  # noqa: S311 - test data


def nested_flow(directory: Path) -> Path:
    return _write(directory, "a: " + "[" * 3000 + "]" * 3000 + "\n")


def nested_block(directory: Path) -> Path:
    """Block style, compact: ``- - - x`` is a list in a list in a list."""
    return _write(directory, "a:\n" + "- " * 3000 + "x\n")


def fifo(directory: Path) -> Path:
    path = directory / "input.yaml"
    os.mkfifo(path)
    return path


def dev_zero(directory: Path) -> Path:
    path = directory / "input.yaml"
    path.symlink_to("/dev/zero")
    return path


def oversized(directory: Path) -> Path:
    return larger_than(MAX_FILE_BYTES)(directory)


def larger_than(limit: int) -> Callable[[Path], Path]:
    """A text file (comment lines) one line longer than ``limit`` bytes."""

    def make(directory: Path) -> Path:
        line = "# " + "x" * 77 + "\n"
        return _write(directory, line * (limit // len(line) + 1))

    return make


def sparse_huge(directory: Path) -> Path:
    """8 GiB that takes no disk: only the size check can refuse it in time."""
    path = directory / "input.yaml"
    with path.open("wb") as out:
        out.truncate(8 << 30)
    return path


def a_directory(directory: Path) -> Path:
    path = directory / "input.yaml"
    path.mkdir()
    return path


COMMON = [
    Hostile("billion-laughs", billion_laughs, "more than 50000 nodes"),
    Hostile("non-utf8", non_utf8, "not UTF-8 text: byte 0xe9 at column"),
    Hostile("binary", binary, "binary data"),
    Hostile("nested-3000-flow", nested_flow, "nest"),
    Hostile("nested-3000-block", nested_block, "nested deeper than 100 levels"),
    Hostile("fifo", fifo, "not a regular file (a FIFO)"),
    Hostile("dev-zero", dev_zero, "not a regular file (a character device)"),
    Hostile("oversized", oversized, "too large"),
    Hostile("sparse-8GiB", sparse_huge, "too large"),
    Hostile("directory", a_directory, "not a regular file (a directory)"),
]


def mistyped(text: str, expect: str) -> Hostile:
    return Hostile("mistyped", lambda directory: _write(directory, text), expect)
