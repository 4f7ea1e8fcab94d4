"""Fault injection for the fake Slack: queued 429s and 5xx, and per-channel pacing."""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

# Fault keys: a Web API method name, WEBHOOK for incoming webhooks, UPLOAD for the upload
# URLs that files.getUploadURLExternal hands out, ANY for every call.
WEBHOOK = "incoming-webhook"
UPLOAD = "file-upload"
ANY = "*"


@dataclass(frozen=True)
class Fault:
    """One injected answer. A 429 carries ``retry_after`` seconds and Slack's ``ratelimited``."""

    status: int
    retry_after: int | None = None

    @property
    def error(self) -> str:
        return "ratelimited" if self.status == 429 else "server_error"


@dataclass
class _Queued:
    fault: Fault
    left: int


class Faults:
    """Answers queued per method; each is used ``count`` times, in the order queued."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: dict[str, deque[_Queued]] = {}

    def add(self, method: str, fault: Fault, count: int) -> None:
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        with self._lock:
            self._queued.setdefault(method, deque()).append(_Queued(fault, count))

    def take(self, method: str) -> Fault | None:
        """The next fault for ``method`` (exact name first, then ANY), or None."""
        with self._lock:
            for key in (method, ANY):
                queue = self._queued.get(key)
                if not queue:
                    continue
                entry = queue[0]
                entry.left -= 1
                if entry.left == 0:
                    queue.popleft()
                return entry.fault
        return None

    def pending(self, method: str) -> int:
        """How many injected answers are still queued for ``method``."""
        with self._lock:
            return sum(entry.left for entry in self._queued.get(method, ()))

    def clear(self) -> None:
        with self._lock:
            self._queued.clear()


class ChannelPacer:
    """Slack's "about one message per second per channel, short bursts allowed".

    A token bucket per channel: ``burst`` messages at once, refilled at
    ``per_second``. A message over the limit is answered 429 and uses no token.
    """

    def __init__(self, per_second: float, burst: int, clock: Callable[[], float]) -> None:
        if per_second <= 0 or burst < 1:
            raise ValueError(f"per_second must be > 0 and burst >= 1, got {per_second}, {burst}")
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # channel -> (tokens, at)
        self.rejected = 0

    def admit(self, channel: str) -> int | None:
        """None if a message may go now, else the whole seconds to wait (``Retry-After``)."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(channel, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.per_second)
            if tokens >= 1.0:
                self._buckets[channel] = (tokens - 1.0, now)
                return None
            self._buckets[channel] = (tokens, now)
            self.rejected += 1
            return max(1, math.ceil((1.0 - tokens) / self.per_second))
