"""Deliver one evidence picture: read its series from Prometheus, draw it, upload it into
the episode's thread.

A picture's row waits in its channel's picture queue until the thread's parent is
posted. It is best effort and never holds a message back: its own queue, a bounded
number of attempts, then it is given up (``dead``) with the reason logged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from guardian.adapters.slack.outbox import OutboxItem
from guardian.adapters.slack.transport import FileUpload, Transport
from guardian.engine.notify.state import ThreadRow
from guardian.engine.picture.evidence_chart import EvidenceChart, Series, render_png
from guardian.model.evidence_picture import PictureRequest
from guardian.model.query import MatrixResult, RangeSeries
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6  # then the picture is given up; the messages never waited for it
PARENT_WAIT_S = 3600.0  # a parent not posted by then (given up, or Slack down): no picture


class RangeQuery(Protocol):
    def __call__(self, expr: str, start: float, end: float, step: float) -> MatrixResult: ...


@dataclass(frozen=True)
class Uploaded:
    file_id: str
    channel_id: str


@dataclass
class PictureMaker:
    """Draws a request from Prometheus's answers and uploads it with ``transport``."""

    transport: Transport
    range_query: RangeQuery

    def deliver(self, item: OutboxItem, thread: ThreadRow | None) -> Uploaded:
        """Raises TransientError (try later) or PermanentError."""
        if thread is None or thread.ts is None or thread.channel_id is None:
            raise TransientError("its thread's parent is not posted yet")
        try:
            request = PictureRequest.from_dict(item.payload)
        except (KeyError, TypeError, ValueError) as exc:
            raise PermanentError(f"an unreadable picture request: {exc}") from exc
        chart = self.chart(request)
        png = render_png(chart)
        samples = sum(len(s.points) for s in chart.series)
        logger.info(
            "slack: evidence picture %s: %d series, %d samples, %d bytes",
            request.filename,
            len(chart.series),
            samples,
            len(png),
        )
        if not samples:
            logger.warning("slack: no samples for %s: %s", request.filename, request.series)
        upload = FileUpload(
            channel_id=thread.channel_id,
            thread_ts=thread.ts,
            filename=request.filename,
            title=request.title,
            content=png,
            alt_txt=request.alt_text,
            initial_comment=request.comment,
        )
        return Uploaded(self.transport.upload(upload), thread.channel_id)

    def chart(self, request: PictureRequest) -> EvidenceChart:
        series: list[Series] = []
        for legend, expr in request.series:
            answer = self._query(expr, request)
            series.extend(_series(legend, answer.series))
        allocated = None
        if request.allocation is not None:
            allocated = _allocated_at(self._query(request.allocation, request), request)
        return EvidenceChart(
            title=request.title,
            start=request.start,
            end=request.end,
            series=tuple(series),
            floor=request.floor,
            window=request.window,
            allocated_at=allocated,
        )

    def _query(self, expr: str, request: PictureRequest) -> MatrixResult:
        return self.range_query(expr, request.start, request.end, request.step)


def _series(legend: str, found: Sequence[RangeSeries]) -> list[Series]:
    """One line per series; several from one query are told apart by their labels."""
    out = []
    for s in found:
        name = legend
        if len(found) > 1:
            name = f"{legend} {{{', '.join(f'{k}={v}' for k, v in s.labels.items())}}}"
        points = tuple((ms / 1000.0, v) for ms, v in s.samples if not math.isinf(v))
        out.append(Series(name, points))
    return out


def _allocated_at(answer: MatrixResult, request: PictureRequest) -> float | None:
    """When the pod got the GPU, if inside the range: its first sample at 1 after a
    step without one (a pod that held it from the start shows no marker)."""
    first = min(
        (ms / 1000.0 for s in answer.series for ms, v in s.samples if v >= 1.0), default=None
    )
    if first is None or first <= request.start + request.step:
        return None
    return first


PictureStep = Callable[[OutboxItem, ThreadRow | None], Uploaded]


def picture_maker(transport: Transport, range_query: RangeQuery | None) -> PictureStep | None:
    """The deliverer's picture step, or None where pictures cannot be drawn."""
    if range_query is None or not transport.can_update:
        return None
    return PictureMaker(transport, range_query).deliver
