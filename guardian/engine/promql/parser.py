"""A PromQL parser with Prometheus 2.42's grammar (``promql/parser/generated_parser.y``).

Precedence climbing stands in for the yacc tables: binary operators by their precedence
(``^`` right-associative), unary ``+``/``-`` binding like ``*``, and the postfix ``[…]``,
``offset`` and ``@`` binding tightest, to the expression just before them. The semantic
checks of ``parse.go`` that run while parsing (offset and ``@`` placement, aggregation
arity, unknown functions) are made here; type checks are in :mod:`.check`.
"""

from __future__ import annotations

import math
import re
from typing import NoReturn

from guardian.engine.golang.strconv import GoNumError
from guardian.engine.promql.ast import (
    AGGREGATORS_WITH_PARAM,
    AggregateExpr,
    BinaryExpr,
    Call,
    Card,
    Expr,
    Matcher,
    MatchType,
    MatrixSelector,
    NumberLiteral,
    ParenExpr,
    StringLiteral,
    SubqueryExpr,
    UnaryExpr,
    VectorMatching,
    VectorSelector,
)
from guardian.engine.promql.errors import PromQLError
from guardian.engine.promql.functions import FUNCTIONS
from guardian.engine.promql.lexer import lex
from guardian.engine.promql.literals import number, parse_duration_literal, round_half_away, unquote
from guardian.engine.promql.regexps import regex_error
from guardian.engine.promql.tokens import AGGREGATORS, KEYWORDS, T, Token

# Binary operators by increasing precedence.
_PRECEDENCE = {
    T.LOR: 1,
    T.LAND: 2,
    T.LUNLESS: 2,
    **dict.fromkeys((T.EQLC, T.NEQ, T.LTE, T.LSS, T.GTE, T.GTR), 3),
    T.ADD: 4,
    T.SUB: 4,
    **dict.fromkeys((T.MUL, T.DIV, T.MOD, T.ATAN2), 5),
    T.POW: 6,
}
_UNARY_OPERAND_PRECEDENCE = 6  # a unary operand takes in only what binds tighter than `*`
# Words that are metric names where an expression starts (Go's metric_identifier).
_NAME_WORDS = frozenset({T.BY, T.WITHOUT, T.OFFSET, T.LAND, T.LOR, T.LUNLESS, T.START, T.END})
# Words that may name a label in by/without/on/ignoring lists (Go's maybe_label).
_LABEL_WORDS = frozenset(
    {T.IDENTIFIER, T.METRIC_IDENTIFIER, T.LAND, T.LOR, T.LUNLESS, T.ATAN2, T.START, T.END}
    | AGGREGATORS
    | KEYWORDS
)
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MATCH_OPS = {
    T.EQL: MatchType.EQUAL,
    T.NEQ: MatchType.NOT_EQUAL,
    T.EQL_REGEX: MatchType.REGEX,
    T.NEQ_REGEX: MatchType.NOT_REGEX,
}
_AT_PLACEMENT = (
    "@ modifier must be preceded by an instant vector selector or range vector selector "
    "or a subquery"
)
_OFFSET_PLACEMENT = (
    "offset modifier must be preceded by an instant vector selector or range vector selector "
    "or a subquery"
)


class Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = lex(text)
        self.i = 0

    # -- token helpers
    def peek(self) -> Token:
        return self.tokens[min(self.i, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        if token.typ is T.ERROR:
            self.fail(token.pos, token.val)
        self.i += 1
        return token

    def fail(self, pos: int, message: str) -> NoReturn:
        raise PromQLError(self.text, pos, message)

    def separator(self, close: T, context: str, expected: str) -> None:
        """After an item of a list: its comma (taken), or the token that closes the list."""
        if self.peek().typ is T.COMMA:
            self.advance()
        elif self.peek().typ is not close:
            self.unexpected(context, expected)

    def unexpected(self, context: str = "", expected: str = "") -> NoReturn:
        token = self.peek()
        if token.typ is T.ERROR:
            self.fail(token.pos, token.val)
        after = self.peek_after()
        if after.typ is T.ERROR:  # Go's lexer reports it first, while yacc recovers
            self.fail(after.pos, after.val)
        message = f"unexpected {token.describe()}"
        if context:
            message += f" in {context}"
        if expected:
            message += f", expected {expected}"
        self.fail(token.pos, message)

    def expect(self, typ: T, context: str, expected: str) -> Token:
        if self.peek().typ is not typ:
            self.unexpected(context, expected)
        return self.advance()

    # -- expressions
    def parse(self) -> Expr:
        if self.peek().typ is T.EOF:
            self.fail(0, "no expression found in input")
        expr = self.expr(0)
        if self.peek().typ is not T.EOF:
            self.unexpected()
        return expr

    def expr(self, min_precedence: int) -> Expr:
        left = self.unary()
        while True:
            op = self.peek()
            precedence = _PRECEDENCE.get(op.typ)
            if precedence is None or precedence < min_precedence:
                return left
            self.advance()
            return_bool, matching = self.bin_modifiers()
            right = self.expr(precedence if op.typ is T.POW else precedence + 1)
            left = BinaryExpr(
                op.typ, left, right, return_bool, matching, start=left.start, op_start=op.pos
            )

    def bin_modifiers(self) -> tuple[bool, VectorMatching]:
        matching = VectorMatching()
        return_bool = False
        if self.peek().typ is T.BOOL:
            self.advance()
            return_bool = True
        if self.peek().typ in (T.ON, T.IGNORING):
            matching.on = self.advance().typ is T.ON
            matching.matching_labels = self.grouping_labels()
            if self.peek().typ in (T.GROUP_LEFT, T.GROUP_RIGHT):
                side = self.advance().typ
                matching.card = Card.MANY_TO_ONE if side is T.GROUP_LEFT else Card.ONE_TO_MANY
                if self.peek().typ is T.LEFT_PAREN:
                    matching.include = self.grouping_labels()
        return return_bool, matching

    def grouping_labels(self) -> list[str]:
        self.expect(T.LEFT_PAREN, "grouping opts", '"("')
        labels: list[str] = []
        while self.peek().typ is not T.RIGHT_PAREN:
            token = self.peek()
            if token.typ not in _LABEL_WORDS or not _LABEL_NAME.fullmatch(token.val):
                self.unexpected("grouping opts", "label")
            labels.append(self.advance().val)
            self.separator(T.RIGHT_PAREN, "grouping opts", '"," or ")"')
        self.advance()
        return labels

    def unary(self) -> Expr:
        op = self.peek()
        if op.typ not in (T.ADD, T.SUB):
            return self.postfix(self.primary())
        self.advance()
        operand = self.expr(_UNARY_OPERAND_PRECEDENCE)
        if isinstance(operand, NumberLiteral):
            if op.typ is T.SUB:
                operand.val = -operand.val
            operand.start = op.pos
            return operand
        return UnaryExpr(op.typ, operand, start=op.pos)

    def primary(self) -> Expr:
        token = self.peek()
        kind = token.typ
        if kind is T.NUMBER:
            self.advance()
            try:
                return NumberLiteral(number(token.val), start=token.pos)
            except GoNumError as exc:
                self.fail(token.pos, f"error parsing number: {exc}")
        if kind is T.STRING:
            self.advance()
            return StringLiteral(self.string_value(token), start=token.pos)
        if kind is T.LEFT_PAREN:
            self.advance()
            inner = self.expr(0)
            self.expect(T.RIGHT_PAREN, "paren expression", '")"')
            return ParenExpr(inner, start=token.pos)
        if kind is T.LEFT_BRACE:
            return self.selector("", token.pos)
        if kind is T.IDENTIFIER and self.peek_after().typ is T.LEFT_PAREN:
            return self.call()
        if kind in AGGREGATORS and self.peek_after().typ in (T.LEFT_PAREN, T.BY, T.WITHOUT):
            return self.aggregation()
        if kind in (T.IDENTIFIER, T.METRIC_IDENTIFIER) or kind in AGGREGATORS | _NAME_WORDS:
            self.advance()
            return self.selector(token.val, token.pos)
        self.unexpected()

    def peek_after(self) -> Token:
        return self.tokens[min(self.i + 1, len(self.tokens) - 1)]

    def string_value(self, token: Token) -> str:
        try:
            return unquote(token.val)
        except ValueError:
            self.fail(token.pos, f"error unquoting string {token.val!r}: invalid syntax")

    # -- selectors
    def selector(self, name: str, start: int) -> VectorSelector:
        matchers: list[Matcher] = []
        if self.peek().typ is T.LEFT_BRACE:
            self.advance()
            matchers = self.matchers()
        if name:
            matchers.append(Matcher(MatchType.EQUAL, "__name__", name))
        return VectorSelector(name, matchers, start=start)

    def matchers(self) -> list[Matcher]:
        out: list[Matcher] = []
        while self.peek().typ is not T.RIGHT_BRACE:
            if self.peek().typ is not T.IDENTIFIER:
                self.unexpected("label matching", 'identifier or "}"')
            name = self.advance()
            if self.peek().typ not in _MATCH_OPS:
                self.unexpected("label matching", "label matching operator")
            op = _MATCH_OPS[self.advance().typ]
            value = self.expect(T.STRING, "label matching", "string")
            matcher = Matcher(op, name.val, self.string_value(value))
            if op in (MatchType.REGEX, MatchType.NOT_REGEX):
                error = regex_error(matcher.value)
                if error is not None:
                    self.fail(name.pos, error)
            out.append(matcher)
            self.separator(T.RIGHT_BRACE, "label matching", '"," or "}"')
        self.advance()
        return out

    # -- calls and aggregations
    def call_args(self, context: str = "") -> list[Expr]:
        """A parenthesised argument list. Go names the aggregation in its errors, and
        nothing for a function call (only its generic error rule applies)."""
        self.expect(T.LEFT_PAREN, context, "")
        args: list[Expr] = []
        while self.peek().typ is not T.RIGHT_PAREN:
            args.append(self.expr(0))
            if self.peek().typ is T.COMMA:
                comma = self.advance()
                if self.peek().typ is T.RIGHT_PAREN:
                    self.fail(comma.pos, "trailing commas not allowed in function call args")
            elif self.peek().typ is not T.RIGHT_PAREN:
                self.unexpected(context)
        self.advance()
        return args

    def call(self) -> Call:
        name = self.advance()
        func = FUNCTIONS.get(name.val)
        if func is None:
            self.fail(name.pos, f'unknown function with name "{name.val}"')
        return Call(func, self.call_args(), start=name.pos)

    def aggregation(self) -> AggregateExpr:
        op = self.advance()
        grouping: list[str] = []
        without = False
        if self.peek().typ in (T.BY, T.WITHOUT):
            without = self.advance().typ is T.WITHOUT
            grouping = self.grouping_labels()
            args = self.call_args("aggregation")
        else:
            args = self.call_args("aggregation")
            if self.peek().typ in (T.BY, T.WITHOUT):
                without = self.advance().typ is T.WITHOUT
                grouping = self.grouping_labels()
        if not args:
            self.fail(op.pos, "no arguments for aggregate expression provided")
        wanted = 2 if op.typ in AGGREGATORS_WITH_PARAM else 1
        if len(args) != wanted:
            self.fail(
                op.pos,
                "wrong number of arguments for aggregate expression provided, "
                f"expected {wanted}, got {len(args)}",
            )
        param = args[0] if wanted == 2 else None
        return AggregateExpr(op.typ, args[-1], param, grouping, without, start=op.pos)

    # -- postfix: ranges, subqueries, offset, @
    def postfix(self, expr: Expr) -> Expr:
        while True:
            kind = self.peek().typ
            if kind is T.LEFT_BRACKET:
                expr = self.range_or_subquery(expr)
            elif kind is T.OFFSET:
                self.offset(expr)
            elif kind is T.AT:
                self.at(expr)
            else:
                return expr

    def duration(self, context: str, expected: str) -> int:
        token = self.expect(T.DURATION, context, expected)
        try:
            return parse_duration_literal(token.val)
        except ValueError as exc:
            self.fail(token.pos, str(exc))

    def range_or_subquery(self, expr: Expr) -> Expr:
        bracket = self.advance()
        range_ms = self.duration("subquery selector", "duration")
        if self.peek().typ is T.RIGHT_BRACKET:
            self.advance()
            if not isinstance(expr, VectorSelector):
                self.fail(bracket.pos, "ranges only allowed for vector selectors")
            if expr.offset_ms:
                self.fail(bracket.pos, "no offset modifiers allowed before range")
            if expr.timestamp_ms is not None:
                self.fail(bracket.pos, "no @ modifiers allowed before range")
            return MatrixSelector(expr, range_ms, start=_start(expr))
        self.expect(T.COLON, "subquery or range", '":" or "]"')
        step_ms = 0
        if self.peek().typ is not T.RIGHT_BRACKET:
            step_ms = self.duration("subquery selector", 'duration or "]"')
        self.expect(T.RIGHT_BRACKET, "subquery selector", '"]"')
        return SubqueryExpr(expr, range_ms, step_ms, start=_start(expr))

    def offset(self, expr: Expr) -> None:
        self.advance()
        sign = 1
        if self.peek().typ is T.SUB:
            self.advance()
            sign = -1
        if self.peek().typ is not T.DURATION:
            self.unexpected("offset", "duration")
        offset_ms = sign * self.duration("offset", "duration")
        target = self.modifier_target(expr, _OFFSET_PLACEMENT)
        if target.offset_ms:
            self.fail(_start(expr), "offset may not be set multiple times")
        target.offset_ms = offset_ms

    def modifier_target(self, expr: Expr, placement: str) -> VectorSelector | SubqueryExpr:
        """The selector or subquery an offset or @ modifier after ``expr`` sets; else the
        ``placement`` error."""
        if isinstance(expr, MatrixSelector):
            return expr.selector
        if isinstance(expr, (VectorSelector, SubqueryExpr)):
            return expr
        self.fail(_start(expr), placement)

    def at(self, expr: Expr) -> None:
        self.advance()
        token = self.peek()
        preprocessor: T | None = None
        timestamp_ms: int | None = None
        if token.typ in (T.START, T.END):
            preprocessor = self.advance().typ
            self.expect(T.LEFT_PAREN, "@", '"("')
            self.expect(T.RIGHT_PAREN, "@", '")"')
        else:
            seconds = self.signed_number()
            if math.isinf(seconds) or math.isnan(seconds) or abs(seconds) >= 2.0**63:
                self.fail(_start(expr), f"timestamp out of bounds for @ modifier: {seconds:f}")
            timestamp_ms = round_half_away(seconds * 1000)
        target = self.modifier_target(expr, _AT_PLACEMENT)
        if target.timestamp_ms is not None or target.start_or_end is not None:
            self.fail(_start(expr), "@ <timestamp> may not be set multiple times")
        target.timestamp_ms, target.start_or_end = timestamp_ms, preprocessor

    def signed_number(self) -> float:
        sign = 1.0
        if self.peek().typ in (T.ADD, T.SUB):
            sign = -1.0 if self.advance().typ is T.SUB else 1.0
        if self.peek().typ is not T.NUMBER:
            self.unexpected("@", "timestamp")
        token = self.advance()
        try:
            return sign * number(token.val)
        except GoNumError as exc:
            self.fail(token.pos, f"error parsing number: {exc}")


def _start(expr: Expr) -> int:
    return expr.start
