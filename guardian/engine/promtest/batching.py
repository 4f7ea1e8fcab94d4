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
CHUNK_STEPS = 200


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


def chunk_of(step_ms: int, interval_ms: int, last_ms: int) -> tuple[int, int]:
    """The (start, end) in ms of the range query that holds ``step_ms``: ``CHUNK_STEPS``
    steps, the last chunk ending at the last step at or before ``last_ms``.

    Chunks are short because promtool allows a query 10,000 samples in memory, the test
    server is held to the same, and a range query holds its whole result.
    """
    span = CHUNK_STEPS * interval_ms
    start = step_ms // span * span
    last_step = last_ms // interval_ms * interval_ms
    return start, min(start + span - interval_ms, last_step)
