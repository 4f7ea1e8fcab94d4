"""The label values the engine splits queries by (``guardian/engine/rules/sharding.py``),
asked of Prometheus at most every few minutes: they only balance the shards, and any
boundaries give the same answer."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

Fetch = Callable[[str, float, float], list[str]]  # label, start, end -> values

RECENT_SECONDS = 3600.0  # values of series seen in the last hour
MAX_AGE_SECONDS = 300.0


class LabelValuesCache:
    def __init__(
        self,
        fetch: Fetch,
        *,
        max_age: float = MAX_AGE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._max_age = max_age
        self._monotonic = monotonic
        self._held: dict[str, tuple[float, list[str]]] = {}
        self._lock = threading.Lock()

    def __call__(self, label: str, ts: float) -> list[str]:
        """The values of ``label`` in the hour before ``ts``; none (queries are asked
        whole) while Prometheus cannot say."""
        now = self._monotonic()
        with self._lock:
            held = self._held.get(label)
        if held is not None and now - held[0] < self._max_age:
            return held[1]
        try:
            values = self._fetch(label, ts - RECENT_SECONDS, ts)
        except GuardianError as exc:  # asked again after max_age; queries go whole until then
            logger.warning("label values of %s unavailable, queries not split: %s", label, exc)
            values = []
        with self._lock:
            self._held[label] = (now, values)
        return values
