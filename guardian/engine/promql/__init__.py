"""PromQL as Prometheus 2.42 parses, checks and prints it.

``parse_expr`` refuses what Prometheus refuses (syntax, types, functions, placement of
``offset`` and ``@``), with Prometheus's ``line:col: parse error: …`` messages.
``printed`` gives the text Prometheus evaluates for a rule: its parser's ``String()``
of the expression.
"""

from __future__ import annotations

from functools import lru_cache

from guardian.engine.promql.ast import Expr, MatchType, ValueType, VectorSelector, walk
from guardian.engine.promql.errors import PromQLError
from guardian.engine.promql.parser import Parser
from guardian.engine.promql.printer import to_string
from guardian.engine.promql.typecheck import check

__all__ = ["Expr", "PromQLError", "ValueType", "metric_names", "parse_expr", "printed"]


def parse_expr(text: str) -> Expr:
    """Parse and type-check ``text``; raises PromQLError."""
    expr = Parser(text).parse()
    check(expr, text)
    return expr


@lru_cache(maxsize=4096)
def printed(text: str) -> str:
    """The expression as Prometheus prints (and evaluates) it; raises PromQLError."""
    return to_string(parse_expr(text))


def metric_names(text: str) -> set[str]:
    """Metric names the expression selects by name (``foo`` or ``{__name__="foo"}``)."""
    names: set[str] = set()
    for node in walk(parse_expr(text)):
        if isinstance(node, VectorSelector):
            names.update(
                m.value for m in node.matchers if m.name == "__name__" and m.type is MatchType.EQUAL
            )
    return names
