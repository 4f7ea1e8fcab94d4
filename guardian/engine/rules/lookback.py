"""How far back a rule's expression reads: the window its evidence covers.

An alert without ``pod_uid`` (dcgm-exporter, older exporters) says nothing about which
pod of that name held the GPU over its window: a pod created inside the window is
partly someone else's evidence. The planner needs the window to tell (evidence.py).
It is the longest path of ranges and offsets through the expression: a range selector
reads its range before its offset, a subquery its range plus what its inner expression
reads; ``@`` pins a selector to a fixed time and reads nothing relative to now.
"""

from __future__ import annotations

from functools import lru_cache

from guardian.engine.promql import PromQLError, parse_expr
from guardian.engine.promql.ast import Expr, MatrixSelector, SubqueryExpr, VectorSelector, children


def _reach_ms(node: Expr) -> int:
    if isinstance(node, VectorSelector):
        return 0 if node.timestamp_ms is not None or node.start_or_end else node.offset_ms
    if isinstance(node, MatrixSelector):
        return node.range_ms + _reach_ms(node.selector)
    if isinstance(node, SubqueryExpr):
        if node.timestamp_ms is not None or node.start_or_end:
            return 0
        return node.offset_ms + node.range_ms + _reach_ms(node.expr)
    return max((_reach_ms(child) for child in children(node)), default=0)


@lru_cache(maxsize=1024)
def lookback_seconds(expr: str) -> float:
    """Seconds before the evaluation time that ``expr`` reads; 0 when it does not parse."""
    try:
        return _reach_ms(parse_expr(expr)) / 1000.0
    except PromQLError:
        return 0.0
