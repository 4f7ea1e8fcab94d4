"""PromQL token kinds and tokens (Go's ``ItemType`` and ``Item``, ``promql/parser/lex.go``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class T(enum.Enum):
    """Token kinds (Go's ItemType)."""

    EOF = "end of input"
    ERROR = "error"
    IDENTIFIER = "identifier"
    METRIC_IDENTIFIER = "metric identifier"
    NUMBER = "number"
    DURATION = "duration"
    STRING = "string"
    COMMA = ","
    COLON = ":"
    LEFT_PAREN = "("
    RIGHT_PAREN = ")"
    LEFT_BRACE = "{"
    RIGHT_BRACE = "}"
    LEFT_BRACKET = "["
    RIGHT_BRACKET = "]"
    EQL = "="
    # Operators.
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    POW = "^"
    EQLC = "=="
    NEQ = "!="
    LTE = "<="
    LSS = "<"
    GTE = ">="
    GTR = ">"
    EQL_REGEX = "=~"
    NEQ_REGEX = "!~"
    AT = "@"
    LAND = "and"
    LOR = "or"
    LUNLESS = "unless"
    ATAN2 = "atan2"
    # Aggregators.
    AVG = "avg"
    BOTTOMK = "bottomk"
    COUNT = "count"
    COUNT_VALUES = "count_values"
    GROUP = "group"
    MAX = "max"
    MIN = "min"
    QUANTILE = "quantile"
    STDDEV = "stddev"
    STDVAR = "stdvar"
    SUM = "sum"
    TOPK = "topk"
    # Keywords.
    BOOL = "bool"
    BY = "by"
    GROUP_LEFT = "group_left"
    GROUP_RIGHT = "group_right"
    IGNORING = "ignoring"
    OFFSET = "offset"
    ON = "on"
    WITHOUT = "without"
    # @ modifier preprocessors.
    START = "start"
    END = "end"


OPERATORS = frozenset(
    {
        T.ADD, T.SUB, T.MUL, T.DIV, T.MOD, T.POW, T.EQLC, T.NEQ, T.LTE, T.LSS, T.GTE, T.GTR,
        T.EQL_REGEX, T.NEQ_REGEX, T.AT, T.LAND, T.LOR, T.LUNLESS, T.ATAN2,
    }
)  # fmt: skip
AGGREGATORS = frozenset(
    {
        T.AVG, T.BOTTOMK, T.COUNT, T.COUNT_VALUES, T.GROUP, T.MAX, T.MIN, T.QUANTILE,
        T.STDDEV, T.STDVAR, T.SUM, T.TOPK,
    }
)  # fmt: skip
KEYWORDS = frozenset(
    {T.BOOL, T.BY, T.GROUP_LEFT, T.GROUP_RIGHT, T.IGNORING, T.OFFSET, T.ON, T.WITHOUT}
)


def is_alpha(ch: str) -> bool:
    return ch == "_" or "a" <= ch <= "z" or "A" <= ch <= "Z"


def is_alnum(ch: str) -> bool:
    return is_alpha(ch) or "0" <= ch <= "9"


@dataclass(frozen=True)
class Token:
    typ: T
    pos: int  # offset of the token's first character in the input
    val: str

    def describe(self) -> str:
        """How an error message names this token (Go's ``Item.desc``)."""
        if self.typ is T.EOF:
            return "end of input"
        if self.typ in (T.IDENTIFIER, T.METRIC_IDENTIFIER, T.NUMBER, T.DURATION, T.STRING):
            shown = self.val if len(self.val) <= 10 else self.val[:10] + "..."
            return f'{self.typ.value} "{shown}"'
        if self.typ in KEYWORDS or self.typ in (T.START, T.END):
            return f"<{self.val}>"
        if self.typ in OPERATORS:
            return f"<op:{self.val}>"
        if self.typ in AGGREGATORS:
            return f"<aggr:{self.val}>"
        return f'"{self.val}"'
