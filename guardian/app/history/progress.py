"""Progress of a long run: a bar on a terminal, plain lines otherwise (logs, CI, pipes)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TextIO

_BAR = 30


class Progress(Protocol):
    def update(self, done: int, total: int, note: str) -> None: ...

    def close(self) -> None: ...


class BarProgress:
    """One line redrawn in place: ``[#####.....] 3/7 note``."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self._stream = stream
        self._label = label
        self._drawn = False

    def update(self, done: int, total: int, note: str) -> None:
        filled = _BAR * done // max(total, 1)
        bar = "#" * filled + "." * (_BAR - filled)
        self._stream.write(f"\r\x1b[2K{self._label} [{bar}] {done}/{total} {note}")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


class LineProgress:
    """One plain line per update, with the elapsed time."""

    def __init__(
        self, stream: TextIO, label: str, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._label = label
        self._monotonic = monotonic
        self._started = monotonic()

    def update(self, done: int, total: int, note: str) -> None:
        elapsed = self._monotonic() - self._started
        self._stream.write(f"{self._label}: {done}/{total} {note} ({elapsed:.1f}s)\n")
        self._stream.flush()

    def close(self) -> None:
        return None


class NoProgress:
    def update(self, done: int, total: int, note: str) -> None:
        return None

    def close(self) -> None:
        return None


def progress_for(stream: TextIO, label: str) -> Progress:
    """A bar when ``stream`` is a terminal, else plain lines."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return BarProgress(stream, label)
    return LineProgress(stream, label)
