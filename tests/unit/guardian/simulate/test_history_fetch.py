"""Chunks, splitting on the server's limits, and the error that names the failed chunk."""

from __future__ import annotations

import io

import pytest

from guardian.adapters.prometheus import QueryFailedError, QueryRejectedError
from guardian.app.history.fetch import ChunkFailedError, RangeFetcher, plan_chunks
from guardian.app.history.progress import BarProgress, LineProgress, NoProgress, progress_for
from guardian.cli._history import make_progress
from guardian.engine.simulate.steps import vectors_by_step
from guardian.model.history import TimeRange
from guardian.model.labels import LabelSet
from guardian.model.query import MatrixResult, RangeSeries

T0 = 1_700_000_000.0


def test_chunks_cover_every_step_once_and_respect_max_points() -> None:
    span = TimeRange(T0, T0 + 100 * 60, 60.0)  # 101 steps

    chunks = plan_chunks(span, chunk_seconds=86400.0, max_points=30)

    steps = [ts for c in chunks for ts in c.span.timestamps_ms()]
    assert steps == span.timestamps_ms()
    assert [c.span.steps for c in chunks] == [30, 30, 30, 11]
    assert chunks[1].describe() == "chunk 2/4 (2023-11-14T22:43:20Z to 2023-11-14T23:12:20Z)"


class FakeServer:
    """Refuses any query over ``limit`` steps, as Prometheus refuses too many samples."""

    def __init__(self, limit: int, error: Exception) -> None:
        self.limit = limit
        self.error = error
        self.asked: list[int] = []

    def query_range(self, expr: str, start: float, end: float, step: float) -> MatrixResult:
        span = TimeRange(start, end, step)
        self.asked.append(span.steps)
        if span.steps > self.limit:
            raise self.error
        points = tuple((ts, float(ts // 60000 % 7)) for ts in span.timestamps_ms())
        return MatrixResult((RangeSeries(LabelSet({"a": "1"}), points),))


@pytest.mark.parametrize(
    "error",
    [
        QueryRejectedError(
            "HTTP 422 execution: query processing would load too many samples into memory",
            reason="execution",
        ),
        QueryFailedError("HTTP 503 timeout: query timed out", reason="timeout"),
        QueryRejectedError("HTTP 400 bad_data: exceeded maximum resolution", reason="bad_query"),
    ],
)
def test_a_chunk_too_big_for_the_server_is_split_until_it_fits(error: Exception) -> None:
    server = FakeServer(limit=10, error=error)
    span = TimeRange(T0, T0 + 39 * 60, 60.0)

    result = RangeFetcher(server).fetch("x", span)

    (series,) = result.series
    assert [ts for ts, _ in series.samples] == span.timestamps_ms()
    assert server.asked[:3] == [40, 20, 10]


def test_other_errors_and_single_steps_fail_naming_the_chunk() -> None:
    refused = QueryRejectedError("HTTP 400 bad_data: parse error", reason="bad_query")
    server = FakeServer(limit=0, error=refused)
    (chunk,) = plan_chunks(TimeRange(T0, T0 + 600, 60.0), 86400.0)

    with pytest.raises(ChunkFailedError) as failed:
        RangeFetcher(server).fetch_chunk("x", chunk, "rule GpuIdle of group g")

    assert str(failed.value).startswith(
        "chunk 1/1 (2023-11-14T22:13:20Z to 2023-11-14T22:23:20Z) failed for rule GpuIdle"
    )
    assert "parse error" in str(failed.value)
    assert server.asked == [11]


def test_vectors_by_step_gives_each_step_the_series_present_then() -> None:
    a, b = LabelSet({"i": "a"}), LabelSet({"i": "b"})
    result = MatrixResult(
        (RangeSeries(a, ((1000, 1.0), (2000, 2.0))), RangeSeries(b, ((2000, 5.0),))),
        warnings=("w",),
    )

    first, second, third = vectors_by_step(result, [1000, 2000, 3000])

    assert [(s.labels, s.value) for s in first.samples] == [(a, 1.0)]
    assert [(s.labels, s.value) for s in second.samples] == [(a, 2.0), (b, 5.0)]
    assert third.samples == ()
    assert third.warnings == ("w",)
    with pytest.raises(ValueError, match="off the requested steps"):
        vectors_by_step(result, [1000])


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    bar, lines = progress_for(tty, "simulate"), progress_for(pipe, "simulate")
    assert isinstance(bar, BarProgress)
    assert isinstance(lines, LineProgress)
    bar.update(1, 4, "chunk 1/4")
    bar.close()
    lines.update(1, 4, "chunk 1/4")
    assert "\r" in tty.getvalue()
    assert "[#######.......................] 1/4 chunk 1/4" in tty.getvalue()
    assert pipe.getvalue().startswith("simulate: 1/4 chunk 1/4 (")
    assert "\r" not in pipe.getvalue()


@pytest.mark.parametrize(
    ("choice", "kind"),
    [("bar", BarProgress), ("lines", LineProgress), ("none", NoProgress)],
)
def test_the_progress_flag_forces_a_kind(choice: str, kind: type) -> None:
    assert isinstance(make_progress(choice, "simulate"), kind)
