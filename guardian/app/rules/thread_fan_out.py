"""The engine's fan-out on threads: a group's rules, and a rule's template expansions, run
at once, each waiting on its own queries (``guardian/engine/rules/fan_out.py``).

The calling thread works through the calls too, with up to ``limit - 1`` helpers from a
pool the whole engine shares, so a batch never waits on a helper that has not started:
a batch inside a batch (a rule's expansions inside its group's rules) cannot starve the
pool. A helper that starts after the work is gone returns at once. Once closed, the
caller runs every call itself (an evaluation that began before a reload finishes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar, cast

T = TypeVar("T")


class _Batch:
    """One fan-out's calls, taken one at a time by whichever thread is free."""

    def __init__(self, count: int) -> None:
        self._next = 0
        self._count = count
        self._done = 0
        self._finished = threading.Condition()

    def take(self) -> int | None:
        with self._finished:
            if self._next >= self._count:
                return None
            self._next += 1
            return self._next - 1

    def finish(self) -> None:
        with self._finished:
            self._done += 1
            if self._done == self._count:
                self._finished.notify_all()

    def wait(self) -> None:
        with self._finished:
            self._finished.wait_for(lambda: self._done == self._count)


class ThreadFanOut:
    def __init__(self, limit: int) -> None:
        """``limit``: calls of one batch running at once, the caller's thread included."""
        self.limit = max(1, limit)
        self._pool = (
            ThreadPoolExecutor(self.limit - 1, thread_name_prefix="guardian-query")
            if self.limit > 1
            else None
        )

    def __call__(self, calls: Sequence[Callable[[], T]], /) -> list[T]:
        if self._pool is None or len(calls) < 2:
            return [call() for call in calls]
        results: list[T | None] = [None] * len(calls)
        errors: list[BaseException | None] = [None] * len(calls)
        batch = _Batch(len(calls))

        def drain() -> None:
            while (index := batch.take()) is not None:
                try:
                    results[index] = calls[index]()
                except BaseException as exc:  # per call: handed to the caller below
                    errors[index] = exc
                finally:
                    batch.finish()

        helpers: list[Future[None]] = []
        for _ in range(min(self.limit, len(calls)) - 1):
            try:
                helpers.append(self._pool.submit(drain))
            except RuntimeError:  # closed (a reload replaced it): the caller does the rest
                break
        drain()
        batch.wait()
        for helper in helpers:
            helper.cancel()  # still queued: nothing left for it
        for error in errors:
            if error is not None:
                raise error
        return cast(list[T], results)  # every slot was filled

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
