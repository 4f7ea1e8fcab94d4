"""Expressions printed as Prometheus 2.42's ``String()`` methods print them
(``promql/parser/printer.go``).

Prometheus evaluates a rule's expression as printed, not as written, and the printed
form differs in ways that can change a result: label matchers are sorted as rendered
text, so ``absent()`` sees them in another order; ``ignoring ()`` with ``group_left``
prints as plain one-to-one matching. Printing the same way makes the engine query what
Prometheus would.
"""

from __future__ import annotations

from guardian.engine.golang.strconv import format_go_value, go_quote
from guardian.engine.promql import ast
from guardian.engine.promql.tokens import T

_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000}
_MS |= {"m": 60_000, "s": 1000, "ms": 1}


def format_duration(ms: int) -> str:
    """``model.Duration.String`` (prometheus/common v0.39): years and weeks only when exact."""
    if ms == 0:
        return "0s"
    out = ""
    for unit, size in _MS.items():
        if unit in ("y", "w") and ms % size:
            continue
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


def _offset(offset_ms: int) -> str:
    if offset_ms > 0:
        return f" offset {format_duration(offset_ms)}"
    if offset_ms < 0:
        return f" offset -{format_duration(-offset_ms)}"
    return ""


def _at(timestamp_ms: int | None, start_or_end: T | None) -> str:
    if timestamp_ms is not None:
        return f" @ {timestamp_ms / 1000:.3f}"
    if start_or_end is T.START:
        return " @ start()"
    if start_or_end is T.END:
        return " @ end()"
    return ""


def _selector(node: ast.VectorSelector, *, modifiers: bool = True) -> str:
    rendered = sorted(
        f"{m.name}{m.type.value}{go_quote(m.value)}"
        for m in node.matchers
        if not (m.name == "__name__" and m.type is ast.MatchType.EQUAL and m.value == node.name)
    )
    suffix = (
        _at(node.timestamp_ms, node.start_or_end) + _offset(node.offset_ms) if modifiers else ""
    )
    if not rendered:
        return f"{node.name}{suffix}"
    return f"{node.name}{{{','.join(rendered)}}}{suffix}"


def _matching(node: ast.BinaryExpr) -> str:
    vm = node.matching
    if vm is None or not (vm.matching_labels or vm.on):
        return ""
    out = f" {'on' if vm.on else 'ignoring'} ({', '.join(vm.matching_labels)})"
    if vm.card in (ast.Card.MANY_TO_ONE, ast.Card.ONE_TO_MANY):
        side = "left" if vm.card is ast.Card.MANY_TO_ONE else "right"
        out += f" group_{side} ({', '.join(vm.include)})"
    return out


def _aggregate(node: ast.AggregateExpr) -> str:
    out = node.op.value
    if node.without:
        out += f" without ({', '.join(node.grouping)}) "
    elif node.grouping:
        out += f" by ({', '.join(node.grouping)}) "
    out += "("
    if node.op in ast.AGGREGATORS_WITH_PARAM and node.param is not None:
        out += f"{to_string(node.param)}, "
    return f"{out}{to_string(node.expr)})"


def to_string(node: ast.Expr) -> str:
    """The text Prometheus 2.42 prints for ``node``."""
    if isinstance(node, ast.VectorSelector):
        return _selector(node)
    if isinstance(node, ast.MatrixSelector):
        vs = node.selector
        at, offset = _at(vs.timestamp_ms, vs.start_or_end), _offset(vs.offset_ms)
        return f"{_selector(vs, modifiers=False)}[{format_duration(node.range_ms)}]{at}{offset}"
    if isinstance(node, ast.SubqueryExpr):
        step = format_duration(node.step_ms) if node.step_ms else ""
        at, offset = _at(node.timestamp_ms, node.start_or_end), _offset(node.offset_ms)
        return f"{to_string(node.expr)}[{format_duration(node.range_ms)}:{step}]{at}{offset}"
    if isinstance(node, ast.NumberLiteral):
        return format_go_value(node.val)
    if isinstance(node, ast.StringLiteral):
        return go_quote(node.val)
    if isinstance(node, ast.ParenExpr):
        return f"({to_string(node.expr)})"
    if isinstance(node, ast.UnaryExpr):
        return f"{node.op.value}{to_string(node.expr)}"
    if isinstance(node, ast.BinaryExpr):
        bool_text = " bool" if node.return_bool else ""
        lhs, rhs = to_string(node.lhs), to_string(node.rhs)
        return f"{lhs} {node.op.value}{bool_text}{_matching(node)} {rhs}"
    if isinstance(node, ast.AggregateExpr):
        return _aggregate(node)
    return f"{node.func.name}({', '.join(to_string(a) for a in node.args)})"
