"""PromQL literals: numbers and durations as Go parses them, strings unquoted with
``strutil.Unquote`` and printed with Go's ``%q`` (``strconv.Quote``).

A ``\\xNN`` or octal escape is one byte in Go, so a value may hold bytes that are not
UTF-8. Such bytes are kept as Python's ``surrogateescape`` characters and quoted back as
``\\xNN``, so the printed expression selects exactly what Prometheus would.
"""

from __future__ import annotations

import math

from guardian.engine.golang.strconv import parse_float, parse_int, split_quotes
from guardian_common.durations import parse_duration_ms

_MAX_NANOS = 2**63 - 1

_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}


def _escape(body: str, i: int, quote: str, out: bytearray) -> int:
    """Append the escape at ``body[i]`` (after the backslash); return the next index."""
    if i >= len(body):
        raise ValueError("invalid syntax")
    ch = body[i]
    if ch in _SIMPLE:
        out.append(_SIMPLE[ch])
        return i + 1
    if ch in "'\"":
        if ch != quote:
            raise ValueError("invalid syntax")
        out.append(ord(ch))
        return i + 1
    if ch in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[ch]
        digits = body[i + 1 : i + 1 + width]
        if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise ValueError("invalid syntax")
        value = int(digits, 16)
        if ch == "x":
            out.append(value)
        elif value > 0x10FFFF or 0xD800 <= value < 0xE000:
            raise ValueError("invalid syntax")
        else:
            out += chr(value).encode("utf-8")
        return i + 1 + width
    if ch in "01234567":
        digits = body[i : i + 3]
        if len(digits) != 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
            raise ValueError("invalid syntax")
        out.append(int(digits, 8))
        return i + 3
    raise ValueError("invalid syntax")


def unquote(literal: str) -> str:
    """The value of a quoted PromQL string; ValueError("invalid syntax") when malformed."""
    quote, body = split_quotes(literal)
    if quote == "`":
        return body
    if "\n" in body:
        raise ValueError("invalid syntax")
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == quote:
            raise ValueError("invalid syntax")
        if ch == "\\":
            i = _escape(body, i + 1, quote, out)
        else:
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_duration_literal(text: str) -> int:
    """Milliseconds of a duration in an expression; ValueError when invalid or zero."""
    try:
        ms = parse_duration_ms(text)
    except ValueError:
        raise ValueError(f'not a valid duration string: "{text}"') from None
    if ms * 1_000_000 > _MAX_NANOS:
        raise ValueError("duration out of range")
    if ms == 0:
        raise ValueError("duration must be greater than 0")
    return ms


def number(text: str) -> float:
    """A number token's value: an int64 literal in Go syntax (hex, octal), else a float."""
    as_int = parse_int(text)
    if as_int is not None:
        return float(as_int)
    return parse_float(text)


def round_half_away(x: float) -> int:
    whole = math.floor(abs(x))
    rounded = whole + 1 if abs(x) - whole >= 0.5 else whole
    return int(math.copysign(rounded, x))
