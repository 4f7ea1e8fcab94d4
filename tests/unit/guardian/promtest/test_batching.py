"""Which rules a test run may fetch for all steps at once, and in which chunks."""

from __future__ import annotations

import pytest

from guardian.engine.promtest.batching import CHUNK_STEPS, chunk_of, reads_only_inputs


@pytest.mark.parametrize(
    ("expr", "batchable"),
    [
        ("m > 0", True),
        ("sum by (job) (rate(m[5m]))", True),
        ("max_over_time(rate(m[1m])[10m:1m])", True),
        ("time() > bool 5", True),
        ("vector(1)", True),
        ("m @ 100", True),
        # Reads what the run writes.
        ("job:m:sum > 1", False),
        ('ALERTS{alertstate="firing"}', False),
        ('{__name__="ALERTS_FOR_STATE"}', False),
        # Could match anything, the run's output included.
        ('{job="api"}', False),
        ('{__name__=~"m.*"}', False),
        # The ends of a range query are not the step.
        ("m @ start()", False),
        ("rate(m[5m])[10m:] @ end()", False),
        # Neither an instant vector nor a scalar.
        ('"text"', False),
        ("m[5m]", False),
        ("not promql (", False),
    ],
)
def test_reads_only_inputs(expr: str, batchable: bool) -> None:
    assert reads_only_inputs(expr, {"job:m:sum"}) is batchable


def test_chunks_cover_every_step_once_and_end_at_the_last_step() -> None:
    interval, last = 60_000, 60_000 * 450 + 30_000  # the last eval_time is between steps
    starts = sorted({chunk_of(t, interval, last) for t in range(0, last + 1, interval)})

    assert starts == [
        (0, (CHUNK_STEPS - 1) * interval),
        (CHUNK_STEPS * interval, (2 * CHUNK_STEPS - 1) * interval),
        (2 * CHUNK_STEPS * interval, 450 * interval),
    ]
