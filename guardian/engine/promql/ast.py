"""The PromQL syntax tree of Prometheus 2.42 (``promql/parser/ast.go``), as plain dataclasses.

Positions (``start``) are offsets into the parsed text, for error messages only: they take
no part in equality, so two parses of equivalent text compare equal.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from guardian.engine.promql.tokens import T


class ValueType(enum.Enum):
    """What an expression evaluates to; the values are Prometheus's documented names."""

    NONE = "none"
    SCALAR = "scalar"
    VECTOR = "instant vector"
    MATRIX = "range vector"
    STRING = "string"

    @property
    def go_name(self) -> str:
        """The name Go's ``ValueType.String`` gives (some messages use it)."""
        return {"instant vector": "vector", "range vector": "matrix"}.get(self.value, self.value)


class MatchType(enum.Enum):
    EQUAL = "="
    NOT_EQUAL = "!="
    REGEX = "=~"
    NOT_REGEX = "!~"


class Card(enum.Enum):
    ONE_TO_ONE = "one-to-one"
    MANY_TO_ONE = "many-to-one"
    ONE_TO_MANY = "one-to-many"
    MANY_TO_MANY = "many-to-many"


@dataclass(frozen=True)
class Function:
    name: str
    arg_types: tuple[ValueType, ...]
    return_type: ValueType
    variadic: int = 0  # extra arguments allowed (of the last type); -1: any number


@dataclass
class Matcher:
    type: MatchType
    name: str
    value: str


@dataclass
class VectorMatching:
    card: Card = Card.ONE_TO_ONE
    matching_labels: list[str] = field(default_factory=list)
    on: bool = False
    include: list[str] = field(default_factory=list)


@dataclass
class Node:
    """What every expression node has: where it starts in the parsed text (by keyword)."""

    start: int = field(default=0, compare=False, kw_only=True)


@dataclass
class VectorSelector(Node):
    name: str
    matchers: list[Matcher]
    offset_ms: int = 0
    timestamp_ms: int | None = None
    start_or_end: T | None = None  # T.START or T.END for `@ start()` / `@ end()`


@dataclass
class MatrixSelector(Node):
    selector: VectorSelector
    range_ms: int


@dataclass
class SubqueryExpr(Node):
    expr: Expr
    range_ms: int
    step_ms: int = 0
    offset_ms: int = 0
    timestamp_ms: int | None = None
    start_or_end: T | None = None


@dataclass
class NumberLiteral(Node):
    val: float


@dataclass
class StringLiteral(Node):
    val: str


@dataclass
class ParenExpr(Node):
    expr: Expr


@dataclass
class UnaryExpr(Node):
    op: T  # T.ADD or T.SUB
    expr: Expr


@dataclass
class BinaryExpr(Node):
    op: T
    lhs: Expr
    rhs: Expr
    return_bool: bool = False
    matching: VectorMatching | None = None  # None once checked, unless both sides are vectors
    op_start: int = field(default=0, compare=False)


@dataclass
class AggregateExpr(Node):
    op: T
    expr: Expr
    param: Expr | None = None
    grouping: list[str] = field(default_factory=list)
    without: bool = False


@dataclass
class Call(Node):
    func: Function
    args: list[Expr]


Expr = (
    VectorSelector
    | MatrixSelector
    | SubqueryExpr
    | NumberLiteral
    | StringLiteral
    | ParenExpr
    | UnaryExpr
    | BinaryExpr
    | AggregateExpr
    | Call
)

COMPARISON_OPS = frozenset({T.EQLC, T.NEQ, T.LTE, T.LSS, T.GTE, T.GTR})
SET_OPS = frozenset({T.LAND, T.LOR, T.LUNLESS})
AGGREGATORS_WITH_PARAM = frozenset({T.TOPK, T.BOTTOMK, T.COUNT_VALUES, T.QUANTILE})


def value_type(node: Expr) -> ValueType:
    """The type an expression has (Go's ``Expr.Type``)."""
    if isinstance(node, (VectorSelector, AggregateExpr)):
        return ValueType.VECTOR
    if isinstance(node, (MatrixSelector, SubqueryExpr)):
        return ValueType.MATRIX
    if isinstance(node, NumberLiteral):
        return ValueType.SCALAR
    if isinstance(node, StringLiteral):
        return ValueType.STRING
    if isinstance(node, (ParenExpr, UnaryExpr)):
        return value_type(node.expr)
    if isinstance(node, Call):
        return node.func.return_type
    both_scalar = value_type(node.lhs) is ValueType.SCALAR is value_type(node.rhs)
    return ValueType.SCALAR if both_scalar else ValueType.VECTOR


def children(node: Expr) -> list[Expr]:
    """The direct sub-expressions of ``node``, in source order."""
    if isinstance(node, MatrixSelector):
        return [node.selector]
    if isinstance(node, (SubqueryExpr, ParenExpr, UnaryExpr)):
        return [node.expr]
    if isinstance(node, BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, AggregateExpr):
        return [node.param, node.expr] if node.param is not None else [node.expr]
    if isinstance(node, Call):
        return list(node.args)
    return []


def walk(node: Expr) -> list[Expr]:
    """``node`` and all its descendants, depth first."""
    out = [node]
    for child in children(node):
        out.extend(walk(child))
    return out
