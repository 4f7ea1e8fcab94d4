"""The notification queue: never blocks, drops the oldest past its capacity (counted),
batches of 64 to every Alertmanager, one acceptance delivers, an outage keeps the batch."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from guardian.adapters.alert_queue import MAX_BATCH, NotificationQueue
from guardian.adapters.alertmanager import AlertmanagerRejected, AlertmanagerUnavailable
from guardian.model.alertmanager_api import PostableAlert
from guardian.model.labels import LabelSet


def alert(i: int) -> PostableAlert:
    return PostableAlert(LabelSet({"alertname": "A", "i": str(i)}), LabelSet(), 0.0, 1.0, "u")


class FakeAlertmanager:
    def __init__(self, name: str, *, fail: Exception | None = None) -> None:
        self.name = name
        self.fail = fail
        self.batches: list[list[int]] = []
        self.lock = threading.Lock()

    def post_alerts(self, body: bytes) -> None:
        if self.fail is not None:
            raise self.fail
        with self.lock:
            self.batches.append([int(a["labels"]["i"]) for a in json.loads(body)])

    @property
    def received(self) -> list[int]:
        return [i for batch in self.batches for i in batch]


class Observer:
    """Counts per kind of event (the queue's observer protocol)."""

    def __init__(self) -> None:
        self.sent_alerts: dict[str, int] = {}
        self.failures: dict[str, int] = {}
        self.drops: dict[str, int] = {}
        self.length = 0

    def sent(self, alertmanager: str, alerts: int, seconds: float) -> None:
        self.sent_alerts[alertmanager] = self.sent_alerts.get(alertmanager, 0) + alerts

    def failed(self, alertmanager: str, seconds: float) -> None:
        self.failures[alertmanager] = self.failures.get(alertmanager, 0) + 1

    def dropped(self, reason: str, alerts: int) -> None:
        self.drops[reason] = self.drops.get(reason, 0) + alerts

    def queued(self, length: int) -> None:
        self.length = length


@pytest.fixture
def observer() -> Observer:
    return Observer()


@contextmanager
def running(
    *ams: FakeAlertmanager, capacity: int = 100, observer: Observer | None = None
) -> Iterator[NotificationQueue]:
    queue = NotificationQueue(list(ams), capacity=capacity, observer=observer, max_backoff=0.05)
    yield queue
    queue.stop()


def test_past_the_capacity_the_oldest_are_dropped_and_counted(observer: Observer) -> None:
    am = FakeAlertmanager("am")
    queue = NotificationQueue([am], capacity=5, observer=observer)
    queue.send([alert(i) for i in range(3)])
    queue.send([alert(i) for i in range(3, 8)])
    assert len(queue) == 5
    assert observer.drops == {"queue_full": 3}
    queue.send([alert(i) for i in range(100, 107)])  # larger than the capacity on its own
    assert observer.drops == {"queue_full": 3 + 5 + 2}
    queue.start()
    assert queue.wait_idle(5)
    queue.stop()
    assert am.received == [102, 103, 104, 105, 106]
    assert observer.length == 0


def test_batches_of_64_to_every_alertmanager(observer: Observer) -> None:
    one, two = FakeAlertmanager("one"), FakeAlertmanager("two")
    with running(one, two, capacity=1000, observer=observer) as queue:
        queue.send([alert(i) for i in range(150)])
        queue.start()
        assert queue.wait_idle(5)
    assert [len(b) for b in one.batches] == [MAX_BATCH, MAX_BATCH, 150 - 2 * MAX_BATCH]
    assert one.received == list(range(150)) == two.received
    assert observer.sent_alerts == {"one": 150, "two": 150}


def test_one_acceptance_delivers(observer: Observer) -> None:
    up = FakeAlertmanager("up")
    down = FakeAlertmanager("down", fail=AlertmanagerUnavailable("refused"))
    with running(up, down, observer=observer) as queue:
        queue.send([alert(1)])
        queue.start()
        assert queue.wait_idle(5)
    assert up.received == [1]
    assert observer.failures == {"down": 1}
    assert observer.drops == {}


def test_an_outage_keeps_the_batch_until_an_alertmanager_is_back(observer: Observer) -> None:
    am = FakeAlertmanager("am", fail=AlertmanagerUnavailable("refused"))
    with running(am, observer=observer) as queue:
        queue.send([alert(i) for i in range(3)])
        queue.start()
        assert not queue.wait_idle(0.3)
        queue.send([alert(3)])
        assert len(queue) in (1, 4)  # the batch is in flight or back in the queue
        am.fail = None
        assert queue.wait_idle(5)
    assert am.received == [0, 1, 2, 3]
    assert observer.drops == {}
    assert observer.failures["am"] >= 2


def test_refused_for_good_by_every_alertmanager_is_dropped(observer: Observer) -> None:
    bad = FakeAlertmanager("am", fail=AlertmanagerRejected("HTTP 400"))
    with running(bad, observer=observer) as queue:
        queue.send([alert(1), alert(2)])
        queue.start()
        assert queue.wait_idle(5)
    assert observer.drops == {"rejected": 2}


def test_send_never_waits_for_the_network() -> None:
    gate = threading.Event()

    class Stuck(FakeAlertmanager):
        def post_alerts(self, body: bytes) -> None:
            gate.wait(5)

    with running(Stuck("stuck")) as queue:
        queue.start()
        queue.send([alert(0)])
        done = threading.Event()

        def more(q: NotificationQueue = queue) -> None:
            q.send([alert(1)])
            done.set()

        threading.Thread(target=more).start()
        assert done.wait(1)
        gate.set()
