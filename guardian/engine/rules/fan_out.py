"""Running a batch of independent calls: the engine says what may run at once, the app
how (``guardian/app/rules/thread_fan_out.py``: a bounded pool of threads).

The engine hands over a group's rules (each waits on its query, and Prometheus answers
several at once) and a rule's template expansions (each waits on its ``query`` calls).
Results come back in the order of the calls, so what follows does not depend on which
finished first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class FanOut(Protocol):
    def __call__(self, calls: Sequence[Callable[[], T]], /) -> list[T]:
        """Every call's result, in order; the first exception a call raised is raised."""
        ...


def in_order(calls: Sequence[Callable[[], T]], /) -> list[T]:
    """One after another in this thread (Prometheus 2.42 evaluates a group this way)."""
    return [call() for call in calls]
