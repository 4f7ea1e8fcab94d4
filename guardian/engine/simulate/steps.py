"""A range query's matrix, cut back into the instant vectors of its steps.

Prometheus evaluates every step of a range query exactly as an instant query at that
time, so the vector at step ``t`` is the set of series that have a point at ``t``.
Series labels are shared between steps (one ``LabelSet`` per series), which keeps the
per-step work to building the sample tuples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from guardian.model.query import MatrixResult, PromSample, QueryResult


def vectors_by_step(result: MatrixResult, steps_ms: Sequence[int]) -> list[QueryResult]:
    """The instant answer at each of ``steps_ms``, in order. A point at a time that is not
    one of the steps is an error (the caller asked for exactly these steps)."""
    by_ts: defaultdict[int, list[PromSample]] = defaultdict(list)
    for series in result.series:
        labels = series.labels
        for ts, value in series.samples:
            by_ts[ts].append(PromSample(labels, value))
    unknown = set(by_ts) - set(steps_ms)
    if unknown:
        raise ValueError(f"the matrix has points off the requested steps: {sorted(unknown)[:3]}")
    return [
        QueryResult(tuple(by_ts.get(ts, ())), result.warnings, result.partial) for ts in steps_ms
    ]
