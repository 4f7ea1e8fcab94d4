"""Which rule expressions of a test run can be fetched for all steps in one range query.

A test group evaluates every rule at every step, and the engine's output (``ALERTS``,
``ALERTS_FOR_STATE``, recorded series) is written back as it goes, so a rule that reads
such output must be queried step by step, after the writes before it. A rule that reads
only the input series gives the same answer at each step whether asked step by step or
in one range query: Prometheus evaluates a range query as one instant evaluation per
step, with the same lookback and subquery alignment. Anything this cannot be sure of is
left to step-by-step queries: a selector without a fixed metric name (it may match the
engine's output), ``@ start()``/``@ end()`` (they mean the range's ends), and results
other than an instant vector or a scalar.
"""

from __future__ import annotations

from collections.abc import Iterable

from guardian.engine.promql import PromQLError, ValueType, parse_expr
from guardian.engine.promql.ast import MatchType, SubqueryExpr, VectorSelector, value_type, walk

ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})
MAX_RANGE_POINTS = 11_000  # Prometheus refuses range queries with more steps per series


def _fixed_name(selector: VectorSelector) -> str | None:
    for matcher in selector.matchers:
        if matcher.name == "__name__" and matcher.type is MatchType.EQUAL:
            return matcher.value
    return None


def reads_only_inputs(expr: str, written: Iterable[str]) -> bool:
    """Whether ``expr`` can be answered by a range query: it selects only metrics, by name,
    that the test run never writes, uses no ``@ start()``/``@ end()``, and gives an
    instant vector or a scalar."""
    try:
        tree = parse_expr(expr)
    except PromQLError:
        return False
    if value_type(tree) not in (ValueType.VECTOR, ValueType.SCALAR):
        return False
    written = set(written) | ALERT_SERIES
    for node in walk(tree):
        if isinstance(node, (VectorSelector, SubqueryExpr)) and node.start_or_end is not None:
            return False
        if isinstance(node, VectorSelector):
            name = _fixed_name(node)
            if name is None or name in written:
                return False
    return True


def range_chunks(last_ms: int, step_ms: int) -> list[tuple[int, int]]:
    """(start, end) in ms of range queries covering steps 0, step, … up to ``last_ms``,
    each within Prometheus's limit on points per series."""
    steps = last_ms // step_ms + 1
    per_chunk = MAX_RANGE_POINTS
    return [
        (first * step_ms, min(first + per_chunk, steps) * step_ms - step_ms)
        for first in range(0, steps, per_chunk)
    ]
