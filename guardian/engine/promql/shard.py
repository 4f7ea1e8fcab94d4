"""Splitting one query into shards that together give exactly its answer.

An expression can be split on a label ``L`` when every step of it works within one value
of ``L``: each aggregation keeps ``L`` in its grouping, each vector match includes ``L``
in what it matches on, no function makes or merges series across values of ``L``
(``absent``, ``vector``, ``scalar``, ``sort``, …), and nothing writes ``L``. Then every
output series is computed from input series of one value of ``L`` only, and carries it;
so evaluating the expression once per set of values, with a matcher on ``L`` added to
every selector, gives disjoint answers whose union is the whole answer, errors included
(series that collide share their value of ``L``, so they collide in the same shard).

The shards are written with a regular expression ``R_i`` per boundary: shard ``i`` is
``L=~R_i`` plus ``L!~R_j`` for every earlier boundary, and the last shard is ``L!~R_j``
for all. Every value (the empty one, for series without ``L``, included) falls in
exactly one shard whatever the ``R_i`` match; the boundaries only balance the shards.
``R_i`` matches the strings that sort before a pivot taken from the label's values.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from guardian.engine.promql import PromQLError, ast, parse_expr
from guardian.engine.promql.printer import to_string
from guardian.engine.promql.tokens import T

# Functions that map each series to at most one series with the same labels (but
# ``__name__``), or that change only the label named in their second argument.
_PER_SERIES = frozenset(
    [
        "abs",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "avg_over_time",
        "ceil",
        "changes",
        "clamp",
        "clamp_max",
        "clamp_min",
        "cos",
        "cosh",
        "count_over_time",
        "days_in_month",
        "day_of_month",
        "day_of_week",
        "day_of_year",
        "deg",
        "delta",
        "deriv",
        "exp",
        "floor",
        "holt_winters",
        "hour",
        "idelta",
        "increase",
        "irate",
        "label_replace",
        "label_join",
        "last_over_time",
        "ln",
        "log10",
        "log2",
        "max_over_time",
        "min_over_time",
        "minute",
        "month",
        "pi",
        "predict_linear",
        "present_over_time",
        "quantile_over_time",
        "rad",
        "rate",
        "resets",
        "round",
        "sgn",
        "sin",
        "sinh",
        "sqrt",
        "stddev_over_time",
        "stdvar_over_time",
        "sum_over_time",
        "tan",
        "tanh",
        "time",
        "timestamp",
        "year",
    ]
)
# Date functions that, called without an argument, make a series of ``vector(time())``.
_DATE = frozenset(
    [
        "days_in_month",
        "day_of_month",
        "day_of_week",
        "day_of_year",
        "hour",
        "minute",
        "month",
        "year",
    ]
)
_NOTHING = "[^\\x{0}-\\x{10ffff}]"  # no string sorts before ""
_MAX_PIVOT = 64  # code points: a prefix of a pivot is a pivot too, and keeps R_i small


@dataclass(frozen=True)
class _Keep:
    """The labels an expression can be split on: ``only`` these, or (``only`` None) every
    label but ``lost``."""

    only: frozenset[str] | None = None
    lost: frozenset[str] = frozenset()

    def meet(self, other: _Keep) -> _Keep:
        if self.only is None and other.only is None:
            return _Keep(None, self.lost | other.lost)
        if other.only is None:
            return other.meet(self)
        if self.only is None:
            return _Keep(other.only - self.lost)
        return _Keep(self.only & other.only)

    def drop(self, names: Iterable[str]) -> _Keep:
        if self.only is None:
            return _Keep(None, self.lost | frozenset(names))
        return _Keep(self.only - frozenset(names))

    def __contains__(self, label: str) -> bool:
        return label not in self.lost if self.only is None else label in self.only


_ANY = _Keep()


class _Unsplittable(Exception):
    pass


def _string(node: ast.Expr) -> str:
    while isinstance(node, ast.ParenExpr):
        node = node.expr
    if not isinstance(node, ast.StringLiteral):
        raise _Unsplittable("a label name that is not a literal")
    return node.val


def _call(node: ast.Call) -> _Keep:
    name = node.func.name
    if name not in _PER_SERIES and name != "histogram_quantile":
        raise _Unsplittable(name)
    if name in _DATE and not node.args:
        raise _Unsplittable(name)
    keep = _ANY
    for arg in node.args:
        keep = keep.meet(_labels(arg))
    if name in ("label_replace", "label_join"):
        keep = keep.drop([_string(node.args[1])])
    if name == "histogram_quantile":
        keep = keep.drop(["le"])
    return keep


def _aggregate(node: ast.AggregateExpr) -> _Keep:
    keep = _labels(node.expr)
    if node.param is not None:
        keep = keep.meet(_labels(node.param))
    if node.op is T.COUNT_VALUES and node.param is not None:
        keep = keep.drop([_string(node.param)])
    if node.without:
        return keep.drop(node.grouping)
    return keep.meet(_Keep(frozenset(node.grouping)))


def _binary(node: ast.BinaryExpr) -> _Keep:
    keep = _labels(node.lhs).meet(_labels(node.rhs))
    vm = node.matching
    if vm is None:
        return keep
    if vm.on:
        keep = keep.meet(_Keep(frozenset(vm.matching_labels)))
    else:
        keep = keep.drop(vm.matching_labels)
    return keep.drop(vm.include)


def _labels(node: ast.Expr) -> _Keep:
    """The labels ``node`` can be split on; raises _Unsplittable."""
    if isinstance(
        node, (ast.VectorSelector, ast.MatrixSelector, ast.NumberLiteral, ast.StringLiteral)
    ):
        return _ANY
    if isinstance(node, (ast.SubqueryExpr, ast.ParenExpr, ast.UnaryExpr)):
        return _labels(node.expr)
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.AggregateExpr):
        return _aggregate(node)
    return _binary(node)


def split_label(expr: ast.Expr, preferred: Sequence[str]) -> str | None:
    """The first of ``preferred`` that ``expr`` can be split on, or None."""
    if ast.value_type(expr) is not ast.ValueType.VECTOR:
        return None
    try:
        keep = _labels(expr)
    except _Unsplittable:
        return None
    if keep.only is None:  # nothing groups or matches by label: a filter, cheap to ask whole
        return None
    # A grouping or match implies a selector below it: what makes series without one
    # (vector(), date functions without an argument) is unsplittable.
    return next((label for label in preferred if label in keep.only - {"__name__"}), None)


_parsed = lru_cache(maxsize=512)(parse_expr)


@lru_cache(maxsize=512)
def query_split_label(text: str, preferred: tuple[str, ...]) -> str | None:
    """``split_label`` of the query ``text`` (None also when it does not parse)."""
    try:
        return split_label(_parsed(text), preferred)
    except PromQLError:  # a query Prometheus will refuse: asked whole, it reports why
        return None


def _escaped(ch: str) -> str:
    if ch.isascii() and (ch.isalnum() or ch in "_-:/ "):
        return ch
    return f"\\x{{{ord(ch):x}}}"


def below(pivot: str) -> str:
    """An RE2 pattern matching exactly the strings that sort before ``pivot`` (by code
    point, as Go compares UTF-8 strings)."""
    if not pivot:
        return _NOTHING
    pattern = ""
    for ch in reversed(pivot):
        branches = [""]  # the string ends here: a proper prefix of the pivot
        if ord(ch) > 0:
            branches.append(f"[\\x{{0}}-\\x{{{ord(ch) - 1:x}}}](?s:.*)")
        if pattern:
            branches.append(f"{_escaped(ch)}{pattern}")
        pattern = f"(?:{'|'.join(branches)})"
    return pattern


def pivots(values: Sequence[str], shards: int) -> list[str]:
    """Up to ``shards - 1`` boundaries that cut the sorted distinct ``values`` into
    shards of about equal size: each the shortest prefix of a value that sorts after
    the value before it."""
    ordered = sorted(set(values))
    cuts: list[str] = []
    for i in range(1, shards):
        index = i * len(ordered) // shards
        if index == 0:
            continue
        prev, value = ordered[index - 1], ordered[index]
        common = 0
        while common < min(len(prev), len(value)) and prev[common] == value[common]:
            common += 1
        pivot = value[: common + 1][:_MAX_PIVOT]
        if pivot > prev and (not cuts or pivot > cuts[-1]):
            cuts.append(pivot)
    return cuts


def _with_matchers(expr: ast.Expr, extra: list[ast.Matcher]) -> str:
    copied = copy.deepcopy(expr)
    for node in ast.walk(copied):
        if isinstance(node, ast.VectorSelector):
            node.matchers.extend(copy.deepcopy(extra))
    return to_string(copied)


@lru_cache(maxsize=256)
def shard_queries(text: str, label: str, cuts: tuple[str, ...]) -> tuple[str, ...]:
    """The query ``text`` split on ``label`` at ``cuts``: ``len(cuts) + 1`` queries."""
    expr = _parsed(text)
    bounds = [below(cut) for cut in cuts]
    queries: list[str] = []
    for i in range(len(bounds) + 1):
        extra = [ast.Matcher(ast.MatchType.NOT_REGEX, label, bound) for bound in bounds[:i]]
        if i < len(bounds):
            extra.append(ast.Matcher(ast.MatchType.REGEX, label, bounds[i]))
        queries.append(_with_matchers(expr, extra))
    return tuple(queries)
