"""The evidence picture, end to end with the real slack_sdk against the fake Slack: drawn
from the range answers, uploaded with Slack's current flow into the episode's thread, and
never in the way of a message when Prometheus or Slack fail."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from guardian.adapters.prometheus import QueryFailedError
from guardian.adapters.sqlite_db import Database
from guardian.app.notify import NotifierLinks, SlackNotifier
from guardian.app.notify.picture_delivery import MAX_ATTEMPTS
from guardian.engine.picture.evidence_chart import SERIES_COLOURS, EvidenceChart, plot_area
from guardian.engine.picture.png import decode_png
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, RangeSeries
from guardian.model.remediation_events import LadderStep
from testbed.slackapi import FakeSlack
from tests.integration.notify.helpers import (
    ALERTS,
    T0,
    TOKEN,
    drain_all,
    event,
    firing,
    labels,
    open_db,
    settings,
)

pytestmark = pytest.mark.e2e

SINCE = T0 - 1800  # the GpuIdle window before the alert went active at T0
BUSY_UNTIL = SINCE - 200  # busy at 90 % until then, idle (0 %) after


class FakeRanges:
    """Prometheus's query_range answers: utilization busy, then idle; every query kept."""

    def __init__(self, failures: int = 0) -> None:
        self.asked: list[tuple[str, float, float, float]] = []
        self.failures = failures

    def __call__(self, expr: str, start: float, end: float, step: float) -> MatrixResult:
        self.asked.append((expr, start, end, step))
        if self.failures:
            self.failures -= 1
            raise QueryFailedError("connection refused", reason="unreachable")
        if not expr.startswith("guardian_gpu_utilization_ratio"):
            return MatrixResult(())
        samples = []
        t = start
        while t <= end:
            samples.append((int(t * 1000), 0.9 if t < BUSY_UNTIL else 0.0))
            t += step
        return MatrixResult((RangeSeries(LabelSet({"uuid": "GPU-1"}), tuple(samples)),))


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS]) as f:
        yield f


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    yield database
    database.close()


def _notifier(fake: FakeSlack, db: Database, ranges: FakeRanges) -> SlackNotifier:
    return SlackNotifier.from_settings(
        settings(fake), db, time.time, {"SLACK_BOT_TOKEN": TOKEN}, NotifierLinks(range_query=ranges)
    )


def _near(pixels: bytes, width: int, x: int, y: int, colour: tuple[int, int, int]) -> bool:
    height = len(pixels) // (3 * width)
    for dy in range(-2, 3):
        yy = y + dy
        if 0 <= yy < height:
            i = 3 * (yy * width + x)
            if tuple(pixels[i : i + 3]) == colour:
                return True
    return False


def test_the_picture_of_the_idle_window_lands_in_the_thread_and_shows_the_series(
    fake: FakeSlack, db: Database
) -> None:
    ranges = FakeRanges()
    n = _notifier(fake, db, ranges)
    lbl = labels(uuid="GPU-1")
    n.on_transitions([firing(lbl, at=T0 + 300)])
    drain_all(n)

    [parent] = fake.messages(ALERTS.id)
    [upload] = fake.files(ALERTS.id)
    assert (upload.completed, upload.thread_ts) == (True, parent.ts)
    assert upload.filename.endswith("-opened.png")
    assert "UTC" in (upload.initial_comment or "")
    assert upload.alt_txt
    assert [r.text for r in parent.replies] == [upload.initial_comment]  # the share message
    # Drawn from the rule's own series, over the window and a quarter before it.
    [(expr, start, end, _step), *_] = ranges.asked
    assert 'uuid="GPU-1"' in expr
    assert 'node="gpu-node-1"' in expr
    assert end - start == pytest.approx(1.25 * (end - SINCE))
    width, height, pixels = decode_png(upload.content)
    chart = EvidenceChart(title="", start=start, end=end, series=())
    plot = plot_area(chart, width, height)
    colour = SERIES_COLOURS[0]
    busy_x, idle_x = plot.x_of(BUSY_UNTIL - 100), plot.x_of((SINCE + end) / 2)
    assert _near(pixels, width, busy_x, plot.y_of(0.9), colour)
    assert not _near(pixels, width, busy_x, plot.y_of(0.0), colour)
    assert _near(pixels, width, idle_x, plot.y_of(0.0), colour)
    assert not _near(pixels, width, idle_x, plot.y_of(0.9), colour)

    # Reclaimed: a second picture, up to the reclaim; later changes add none.
    n.on_remediation([event(lbl, LadderStep.RECLAIM, T0 + 900)])
    drain_all(n)
    files = fake.files(ALERTS.id)
    assert [f.filename.rsplit("-", 1)[1] for f in files] == ["opened.png", "reclaimed.png"]
    assert ranges.asked[-1][2] == T0 + 900
    assert n.outbox_depth() == 0


def test_prometheus_down_gives_the_picture_up_without_holding_a_message_back(
    fake: FakeSlack, db: Database
) -> None:
    ranges = FakeRanges(failures=100)
    n = _notifier(fake, db, ranges)
    first, second = labels(pod="a-0"), labels(pod="b-0")
    n.on_transitions([firing(first)])
    n.on_transitions([firing(second, at=T0 + 310)])
    drain_all(n, timeout=60)

    assert len(fake.messages(ALERTS.id)) == 2  # both parents, whatever the pictures did
    assert fake.files() == []
    assert len(ranges.asked) == 2 * MAX_ATTEMPTS  # each picture tried, then given up
    assert n.outbox_depth() == 0


def test_slack_failing_the_upload_gives_that_picture_up_not_the_thread(
    fake: FakeSlack, db: Database
) -> None:
    n = _notifier(fake, db, FakeRanges())
    fake.fail("files.getUploadURLExternal", status=503, count=MAX_ATTEMPTS)
    lbl = labels()
    n.on_transitions([firing(lbl)])
    n.on_remediation([event(lbl, LadderStep.RECLAIM, T0 + 900)])
    drain_all(n)

    [parent] = fake.messages(ALERTS.id)
    assert "[RECLAIMED" in parent.text
    # The first picture was given up after its attempts; the reclaim's went through.
    assert [f.filename.rsplit("-", 1)[1] for f in fake.files(ALERTS.id)] == ["reclaimed.png"]


class SlowRanges(FakeRanges):
    """A Prometheus that takes its time: each range query blocks until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def __call__(self, expr: str, start: float, end: float, step: float) -> MatrixResult:
        self.release.wait(30)
        return super().__call__(expr, start, end, step)


def test_a_slow_prometheus_never_holds_a_message_back(fake: FakeSlack, db: Database) -> None:
    ranges = SlowRanges()
    n = _notifier(fake, db, ranges)
    n.start()
    try:
        n.on_transitions([firing(labels(pod="a-0"))])
        _wait(lambda: len(fake.messages(ALERTS.id)) == 1)  # its picture now waits on Prometheus
        n.on_transitions([firing(labels(pod="b-0"), at=T0 + 310)])
        _wait(lambda: len(fake.messages(ALERTS.id)) == 2)  # posted while the picture waits
        assert fake.files() == []
        ranges.release.set()
        _wait(lambda: len(fake.files(ALERTS.id)) == 2)
    finally:
        ranges.release.set()
        n.stop()


def _wait(done: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)
