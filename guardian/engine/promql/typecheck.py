"""Type checks of a parsed expression, as Prometheus 2.42's ``parser.checkAST``.

Children are checked before their parent, in source order, and the first finding is
raised, which is the finding Prometheus reports. Like Go's, the check also settles two
things the printer depends on: set operators match many-to-many, and a binary
expression with a scalar side has no vector matching.
"""

from __future__ import annotations

from guardian.engine.promql.ast import (
    COMPARISON_OPS,
    SET_OPS,
    AggregateExpr,
    BinaryExpr,
    Call,
    Card,
    Expr,
    MatchType,
    MatrixSelector,
    ParenExpr,
    SubqueryExpr,
    UnaryExpr,
    ValueType,
    VectorSelector,
    value_type,
)
from guardian.engine.promql.errors import PromQLError
from guardian.engine.promql.regexps import matches_empty
from guardian.engine.promql.tokens import T

_SCALAR_OR_VECTOR = (ValueType.SCALAR, ValueType.VECTOR)
_OPERAND_TYPES = "binary expression must contain only scalar and instant vector types"


class Checker:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, pos: int, message: str) -> None:
        raise PromQLError(self.text, pos, message)

    def expect(self, node: Expr, want: ValueType, context: str) -> None:
        got = self.check(node)
        if got is not want:
            self.fail(node.start, f"expected type {want.value} in {context}, got {got.value}")

    def check(self, node: Expr) -> ValueType:
        if isinstance(node, AggregateExpr):
            self.aggregate(node)
        elif isinstance(node, BinaryExpr):
            self.binary(node)
        elif isinstance(node, Call):
            self.call(node)
        elif isinstance(node, (ParenExpr, MatrixSelector)):
            self.check(node.expr if isinstance(node, ParenExpr) else node.selector)
        elif isinstance(node, UnaryExpr):
            if self.check(node.expr) not in _SCALAR_OR_VECTOR:
                self.fail(
                    node.start,
                    "unary expression only allowed on expressions of type scalar or instant "
                    f'vector, got "{value_type(node.expr).value}"',
                )
        elif isinstance(node, SubqueryExpr):
            inner = self.check(node.expr)
            if inner is not ValueType.VECTOR:
                self.fail(
                    node.start,
                    f"subquery is only allowed on instant vector, got {inner.go_name} instead",
                )
        elif isinstance(node, VectorSelector):
            self.selector(node)
        return value_type(node)

    def aggregate(self, node: AggregateExpr) -> None:
        self.expect(node.expr, ValueType.VECTOR, "aggregation expression")
        if node.param is not None and node.op in (T.TOPK, T.BOTTOMK, T.QUANTILE):
            self.expect(node.param, ValueType.SCALAR, "aggregation parameter")
        if node.param is not None and node.op is T.COUNT_VALUES:
            self.expect(node.param, ValueType.STRING, "aggregation parameter")

    def binary(self, node: BinaryExpr) -> None:
        left, right = self.check(node.lhs), self.check(node.rhs)
        matching = node.matching
        if node.return_bool and node.op not in COMPARISON_OPS:
            self.fail(node.op_start, "bool modifier can only be used on comparison operators")
        if node.op in COMPARISON_OPS and not node.return_bool and left is ValueType.SCALAR is right:
            self.fail(node.op_start, "comparisons between scalars must use BOOL modifier")
        if matching is not None and node.op in SET_OPS and matching.card is Card.ONE_TO_ONE:
            matching.card = Card.MANY_TO_MANY
        if matching is not None and matching.on:
            for name in matching.matching_labels:
                if name in matching.include:
                    self.fail(
                        node.op_start,
                        f'label "{name}" must not occur in ON and GROUP clause at once',
                    )
        if left not in _SCALAR_OR_VECTOR:
            self.fail(node.lhs.start, _OPERAND_TYPES)
        if right not in _SCALAR_OR_VECTOR:
            self.fail(node.rhs.start, _OPERAND_TYPES)
        if (left is not ValueType.VECTOR or right is not ValueType.VECTOR) and matching is not None:
            if matching.matching_labels:
                self.fail(node.start, "vector matching only allowed between instant vectors")
            node.matching = None
        elif (
            matching is not None
            and node.op in SET_OPS
            and matching.card in (Card.ONE_TO_MANY, Card.MANY_TO_ONE)
        ):
            self.fail(node.start, f'no grouping allowed for "{node.op.value}" operation')
        if ValueType.SCALAR in (left, right) and node.op in SET_OPS:
            self.fail(
                node.start,
                f'set operator "{node.op.value}" not allowed in binary scalar expression',
            )

    def call(self, node: Call) -> None:
        func = node.func
        count, given = len(func.arg_types), len(node.args)
        if func.variadic == 0:
            if count != given:
                self.fail(
                    node.start,
                    f'expected {count} argument(s) in call to "{func.name}", got {given}',
                )
        elif count - 1 > given:
            self.fail(
                node.start,
                f'expected at least {count - 1} argument(s) in call to "{func.name}", got {given}',
            )
        elif func.variadic > 0 and count - 1 + func.variadic < given:
            self.fail(
                node.start,
                f"expected at most {count - 1 + func.variadic} argument(s) in call to "
                f'"{func.name}", got {given}',
            )
        for index, arg in enumerate(node.args):
            if index >= count:
                if func.variadic == 0:
                    break
                index = count - 1
            self.expect(arg, func.arg_types[index], f'call to function "{func.name}"')

    def selector(self, node: VectorSelector) -> None:
        if node.name:
            # The last matcher is the name written outside the braces.
            if any(m.name == "__name__" for m in node.matchers[:-1]):
                other = next(m.value for m in node.matchers[:-1] if m.name == "__name__")
                self.fail(
                    node.start, f'metric name must not be set twice: "{node.name}" or "{other}"'
                )
            return
        if not any(not _matches_empty(m.type, m.value) for m in node.matchers):
            self.fail(node.start, "vector selector must contain at least one non-empty matcher")


def _matches_empty(kind: MatchType, value: str) -> bool:
    if kind is MatchType.EQUAL:
        return value == ""
    if kind is MatchType.NOT_EQUAL:
        return value != ""
    empty = matches_empty(value)
    if empty is None:
        return False  # unknown: let it through, Prometheus judges at query time
    return empty if kind is MatchType.REGEX else not empty


def check(expr: Expr, text: str) -> ValueType:
    """The type of ``expr`` (parsed from ``text``); PromQLError at the first finding."""
    return Checker(text).check(expr)
