"""promtool's series notation: ``m{a="b"}`` descriptions and ``values`` sequences.

Follows the series-description grammar of Prometheus 2.42's PromQL parser
(``promql/parser``: ``lexValueSequence``, ``series_item``):

- ``a`` one sample; ``axN`` the value a, N+1 times;
- ``a+bxN`` / ``a-bxN``: a, then N more samples, each adding b to the previous one
  (repeated float addition, as Go does, not ``a + i*b``);
- ``_`` one missing sample; ``_xN`` N missing samples (N, not N+1);
- ``stale`` a staleness marker (also ``stalexN``);
- numbers: decimal with optional fraction and exponent, signed, ``Inf`` and ``NaN``
  in any case. Hexadecimal is not allowed (``0x3`` means 0 repeated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


class NotationError(ValueError):
    """A series description or value sequence promtool would reject."""


@dataclass(frozen=True)
class Stale:
    """A staleness marker in a value sequence."""


STALE: Final = Stale()
Point = float | Stale | None  # None: omitted sample

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]*)?"
_VALUE = rf"(?:[+-]?(?:{_NUMBER}|[iI][nN][fF]|[nN][aA][nN])|stale)"
_ITEM = re.compile(
    rf"^(?:(?P<blank>_)(?:x(?P<blank_times>[0-9]+))?"
    rf"|(?P<value>{_VALUE})(?:(?P<step>[+-](?:{_NUMBER}|[iI][nN][fF]|[nN][aA][nN]))?"
    rf"x(?P<times>[0-9]+))?)$"
)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError as exc:  # e.g. "1e" is lexed as a number but is not one
        raise NotationError(f"bad number or duration syntax: {text!r}") from exc


MAX_SAMPLES = 1_000_000
"""Points one ``values`` string may expand to (also the most all input series of a test
group may have together): two years at a 1m interval. ``0+1x100000000`` would otherwise
take gigabytes before anything is checked."""


def parse_values(text: str, limit: int = MAX_SAMPLES) -> list[Point]:
    """Expand a ``values`` string into one point per sample interval. Raises
    NotationError, before expanding, for an item that would go beyond ``limit`` points."""
    out: list[Point] = []
    for item in str(text).split():
        _check_room(item, len(out), limit)
        match = _ITEM.match(item)
        if match is None:
            raise NotationError(
                f"unexpected {item!r} in series values, expected a number, "
                "'stale', '_', 'axN', 'a+bxN', 'a-bxN' or '_xN'"
            )
        if match["blank"]:
            count = int(match["blank_times"]) if match["blank_times"] is not None else 1
            out.extend([None] * count)
            continue
        value_text = match["value"]
        times = match["times"]
        if value_text == "stale":
            if match["step"] is not None:
                raise NotationError(f"a staleness marker cannot be incremented: {item!r}")
            out.extend([STALE] * (int(times) + 1 if times is not None else 1))
            continue
        value = _number(value_text)
        if times is None:
            out.append(value)
        elif match["step"] is None:
            out.extend([value] * (int(times) + 1))
        else:
            step = _number(match["step"])
            out.append(value)
            for _ in range(int(times)):
                value += step
                out.append(value)
    return out


def _check_room(item: str, have: int, limit: int) -> None:
    """Refuse ``item`` when its points would take the sequence beyond ``limit``."""
    match = _ITEM.match(item)
    if match is None:
        return  # parse_values says what is wrong with it
    times = match["blank_times"] if match["blank"] else match["times"]
    count = 1 if times is None else int(times) + (0 if match["blank"] else 1)
    if have + count > limit:
        raise NotationError(
            f"the input series of a test group may have at most {MAX_SAMPLES} samples "
            f"together; {item!r} goes beyond"
        )


# ----------------------------------------------------------------- label sets

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        self.skip_space()
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "end of input"
            raise NotationError(f"expected {char!r} at position {self.pos}, found {found}")
        self.pos += 1

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        self.skip_space()
        found = pattern.match(self.text, self.pos)
        if found is None:
            raise NotationError(f"expected {what} at position {self.pos} in {self.text!r}")
        self.pos = found.end()
        return found.group(0)

    def string(self) -> str:
        self.skip_space()
        quote = self.peek()
        if quote not in ('"', "'", "`"):
            raise NotationError(f"expected a quoted label value at position {self.pos}")
        self.pos += 1
        out: list[str] = []
        while True:
            char = self.peek()
            if not char:
                raise NotationError(f"unterminated quoted string in {self.text!r}")
            self.pos += 1
            if char == quote:
                return "".join(out)
            if char == "\\" and quote != "`":
                out.append(self._escape(quote))
            else:
                out.append(char)

    def _escape(self, quote: str) -> str:
        char = self.peek()
        self.pos += 1
        if char in _ESCAPES:
            return _ESCAPES[char]
        if char in ("\\", quote):
            return char
        widths = {"x": 2, "u": 4, "U": 8}
        if char in widths:
            digits = self.text[self.pos : self.pos + widths[char]]
            self.pos += widths[char]
            try:
                return chr(int(digits, 16))
            except ValueError as exc:
                raise NotationError(f"invalid escape \\{char}{digits}") from exc
        if char.isdigit():
            digits = char + self.text[self.pos : self.pos + 2]
            self.pos += 2
            try:
                return chr(int(digits, 8))
            except ValueError as exc:
                raise NotationError(f"invalid escape \\{digits}") from exc
        raise NotationError(f"unknown escape sequence \\{char}")


def parse_metric(text: str) -> dict[str, str]:
    """A series description ``name{l="v", ...}`` (or ``{__name__="name", ...}``) as labels.

    ``{}`` is the empty label set (a scalar's sample).
    Only ``=`` is allowed, as in ``parser.ParseMetric``. Empty values are kept (an
    expected sample with one never matches, as in promtool).
    """
    scanner = _Scanner(str(text))
    labels: dict[str, str] = {}
    scanner.skip_space()
    if not scanner.peek():
        raise NotationError("empty series description")
    if scanner.peek() != "{":
        labels["__name__"] = scanner.match(_NAME, "a metric name")
    scanner.skip_space()
    if scanner.peek() == "{":
        scanner.pos += 1
        scanner.skip_space()
        while scanner.peek() != "}":
            name = scanner.match(_LABEL, "a label name")
            scanner.expect("=")
            if name in labels:
                raise NotationError(f"label {name!r} given twice in {text!r}")
            labels[name] = scanner.string()
            scanner.skip_space()
            if scanner.peek() == ",":
                scanner.pos += 1
                scanner.skip_space()
            elif scanner.peek() != "}":
                raise NotationError(f"expected ',' or '}}' at position {scanner.pos} in {text!r}")
        scanner.pos += 1
    scanner.skip_space()
    if scanner.pos != len(scanner.text):
        raise NotationError(f"unexpected text after the series at position {scanner.pos}")
    return labels
