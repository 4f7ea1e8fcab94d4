"""Fault injection and the request log, for tests that assert how a client behaves."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from testbed.kubeapi.errors import ApiError, reason_for


@dataclass
class Fault:
    """Make matching requests fail, stall or drop.

    ``verb`` is a Kubernetes verb (get, list, watch, create, update, patch,
    delete) or None for any; ``path`` a regular expression searched in the URL
    path. ``times`` is how many requests it hits (None: all of them). A fault
    with ``status`` answers with that Status code; with only ``delay`` the
    request then proceeds normally; ``disconnect`` closes the connection with
    no response at all.
    """

    verb: str | None = None
    path: str | None = None
    status: int | None = None
    message: str | None = None
    reason: str | None = None
    delay: float = 0.0
    times: int | None = 1
    retry_after: int | None = None
    disconnect: bool = False
    hits: int = 0

    def matches(self, verb: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.verb is not None and self.verb != verb:
            return False
        return self.path is None or re.search(self.path, path) is not None

    def error(self) -> ApiError | None:
        if self.status is None:
            return None
        retry_after = self.retry_after
        if retry_after is None and self.status == 429:
            retry_after = 1
        return ApiError(
            self.status,
            self.message or f"injected fault: {reason_for(self.status)}",
            reason=self.reason,
            retry_after=retry_after,
        )


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    content_type: str | None
    body: Any  # decoded JSON, or the raw text when it was not JSON, or None
    field_manager: str | None
    user_agent: str | None
    status: int = 0


@dataclass
class Recorder:
    """Thread-safe store of faults and request records."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _faults: list[Fault] = field(default_factory=list)
    _requests: list[RequestRecord] = field(default_factory=list)

    def add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def take_fault(self, verb: str, path: str) -> Fault | None:
        """The first live fault for this request, counting the hit."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(verb, path):
                    fault.hits += 1
                    return fault
        return None

    def record(self, entry: RequestRecord) -> None:
        with self._lock:
            self._requests.append(entry)

    def requests(self, *, verb: str | None = None, path: str | None = None) -> list[RequestRecord]:
        with self._lock:
            return [
                r
                for r in self._requests
                if (verb is None or r.verb == verb)
                and (path is None or re.search(path, r.path) is not None)
            ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()
