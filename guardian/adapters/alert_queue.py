"""The queue between the engine and the Alertmanagers, as Prometheus 2.42's notifier
(``notifier/notifier.go`` ``Send``, ``Run``, ``nextBatch``, ``sendAll``) with one change:
a batch that no Alertmanager accepted is put back at the head of the queue and tried again
after a backoff, so an outage loses nothing while the queue has room.

- ``send`` never blocks the caller (an evaluation): it appends under a lock. Past the
  capacity the *oldest* queued alerts are dropped and counted; a call larger than the
  capacity drops its own first alerts, as Prometheus does.
- One worker thread takes batches of up to 64 alerts from the head and posts each batch to
  every Alertmanager at once. One 2xx anywhere delivers it. A batch every Alertmanager
  refused for good (4xx) is dropped and counted; otherwise it goes back and waits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from guardian.adapters.alertmanager import AlertmanagerRejected, encode_alerts
from guardian.model.alertmanager_api import PostableAlert

logger = logging.getLogger(__name__)

MAX_BATCH = 64  # notifier.go maxBatchSize
DEFAULT_CAPACITY = 10_000  # --alertmanager.notification-queue-capacity


class Poster(Protocol):
    name: str

    def post_alerts(self, body: bytes) -> None: ...


class QueueObserver(Protocol):
    """What the queue reports (the app turns it into metrics)."""

    def sent(self, alertmanager: str, alerts: int, seconds: float) -> None: ...

    def failed(self, alertmanager: str, seconds: float) -> None: ...

    def dropped(self, reason: str, alerts: int) -> None: ...

    def queued(self, length: int) -> None: ...


class _NoObserver:
    def sent(self, alertmanager: str, alerts: int, seconds: float) -> None:
        return None

    def failed(self, alertmanager: str, seconds: float) -> None:
        return None

    def dropped(self, reason: str, alerts: int) -> None:
        return None

    def queued(self, length: int) -> None:
        return None


class NotificationQueue:
    def __init__(
        self,
        alertmanagers: Sequence[Poster],
        *,
        capacity: int = DEFAULT_CAPACITY,
        observer: QueueObserver | None = None,
        max_backoff: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.alertmanagers = list(alertmanagers)
        self.capacity = capacity
        self.observer: QueueObserver = observer or _NoObserver()
        self.max_backoff = max_backoff
        self._monotonic = monotonic
        self._queue: deque[PostableAlert] = deque()
        self._in_flight = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, len(self.alertmanagers)), thread_name_prefix="alertmanager-post"
        )

    # ------------------------------------------------------------------ producer side
    def send(self, alerts: Sequence[PostableAlert]) -> None:
        """Queue ``alerts``; never waits for the network."""
        if not alerts:
            return
        alerts = list(alerts)
        with self._cond:
            if len(alerts) > self.capacity:
                self._drop(len(alerts) - self.capacity)
                alerts = alerts[len(alerts) - self.capacity :]
            self._queue.extend(alerts)
            self._trim()
            self.observer.queued(len(self._queue))
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued has been delivered (or dropped); False on timeout."""
        deadline = self._monotonic() + timeout
        with self._cond:
            while self._queue or self._in_flight:
                left = deadline - self._monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
        return True

    def _drop(self, count: int) -> None:
        self.observer.dropped("queue_full", count)
        logger.warning("Alertmanager queue full: dropped the %s oldest alert(s)", count)

    def _trim(self) -> None:
        overflow = len(self._queue) - self.capacity
        if overflow > 0:
            for _ in range(overflow):
                self._queue.popleft()
            self._drop(overflow)

    # ------------------------------------------------------------------ worker side
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="alertmanager-queue", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sending; alerts still queued are not sent (Alertmanager expires them at
        their endsAt, as after a Prometheus shutdown)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _next_batch(self) -> list[PostableAlert]:
        with self._cond:
            while not self._queue and not self._stop.is_set():
                self._cond.wait(1.0)
            batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            self._in_flight = len(batch)
            self.observer.queued(len(self._queue))
            return batch

    def _run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            batch = self._next_batch()
            if not batch:
                continue
            try:
                delivered = self.deliver(batch)
            except Exception:  # the loop edge: the worker must outlive any bug
                logger.exception("Alertmanager queue: delivering a batch failed")
                delivered = False
            if delivered:
                backoff = 0.0
                self._finish()
                continue
            self._requeue(batch)
            backoff = min(self.max_backoff, max(0.5, backoff * 2))
            self._stop.wait(backoff)

    def _finish(self) -> None:
        with self._cond:
            self._in_flight = 0
            self._cond.notify_all()

    def _requeue(self, batch: list[PostableAlert]) -> None:
        with self._cond:
            self._queue.extendleft(reversed(batch))
            self._in_flight = 0
            self._trim()
            self.observer.queued(len(self._queue))
            self._cond.notify_all()

    def deliver(self, batch: list[PostableAlert]) -> bool:
        """Post ``batch`` to every Alertmanager at once. True when it is done with:
        accepted by one, or refused for good by all (then counted as dropped)."""
        if not self.alertmanagers:
            self.observer.dropped("no_alertmanager", len(batch))
            return True
        body = encode_alerts(batch)
        results = list(
            self._pool.map(lambda am: self._post(am, body, len(batch)), self.alertmanagers)
        )
        if any(r is None for r in results):
            return True
        if all(isinstance(r, AlertmanagerRejected) for r in results):
            self.observer.dropped("rejected", len(batch))
            logger.error("Alertmanager refused %s alert(s) for good: %s", len(batch), results[0])
            return True
        return False

    def _post(self, am: Poster, body: bytes, count: int) -> Exception | None:
        started = self._monotonic()
        try:
            am.post_alerts(body)
        except Exception as exc:  # per item: one Alertmanager's failure is its own
            self.observer.failed(am.name, self._monotonic() - started)
            logger.warning("Alertmanager %s: %s alert(s) not delivered: %s", am.name, count, exc)
            return exc
        self.observer.sent(am.name, count, self._monotonic() - started)
        return None
