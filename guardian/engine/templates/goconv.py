"""Go's ``strconv`` number parsing (``ParseFloat``, ``ParseInt`` with base 0, ``Unquote``)."""

from __future__ import annotations

import math
import re

from guardian.engine.templates.gofmt import go_quote

_DIGITS = r"\d(?:_?\d)*"
_DEC_FLOAT = re.compile(
    rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?", re.ASCII
)
_HEX = r"[0-9a-fA-F](?:_?[0-9a-fA-F])*"
_HEX_FLOAT = re.compile(
    rf"[+-]?0[xX]_?(?:{_HEX}(?:\.(?:{_HEX})?)?|\.{_HEX})[pP][+-]?{_DIGITS}", re.ASCII
)
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)
_INT = re.compile(
    r"[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])*|[1-9](?:_?\d)*)",
    re.ASCII,
)


class GoNumError(ValueError):
    """A ``*strconv.NumError``: ``strconv.ParseFloat: parsing "x": invalid syntax``."""

    def __init__(self, func: str, text: str, reason: str) -> None:
        super().__init__(f"strconv.{func}: parsing {go_quote(text)}: {reason}")


def parse_float(text: str) -> float:
    """``strconv.ParseFloat(text, 64)``; raises :class:`GoNumError` like Go."""
    if _SPECIAL.fullmatch(text):
        lowered = text.lower()
        if "nan" in lowered:
            return math.nan
        return -math.inf if lowered.startswith("-") else math.inf
    if _HEX_FLOAT.fullmatch(text):
        value = float.fromhex(text.replace("_", ""))
    elif _DEC_FLOAT.fullmatch(text):
        value = float(text.replace("_", ""))
    else:
        raise GoNumError("ParseFloat", text, "invalid syntax")
    if math.isinf(value):
        raise GoNumError("ParseFloat", text, "value out of range")
    return value


def parse_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``; ``None`` when the text is not an int64."""
    if not _INT.fullmatch(text):
        return None
    body = text.lstrip("+-").replace("_", "")
    negative = text.startswith("-")
    if len(body) > 1 and body[0] == "0" and body[1] not in "xXbBoO":
        value = int(body, 8)
    else:
        value = int(body, 0)
    value = -value if negative else value
    if not -(2**63) <= value < 2**63:
        return None
    return value


_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


def unquote(quoted: str) -> str:
    """``strconv.Unquote`` for "…", `…` and '…' literals; ValueError("invalid syntax")."""
    if len(quoted) < 2 or quoted[0] != quoted[-1] or quoted[0] not in "\"'`":
        raise ValueError("invalid syntax")
    quote, body = quoted[0], quoted[1:-1]
    if quote == "`":
        if "`" in body:
            raise ValueError("invalid syntax")
        return body.replace("\r", "")
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == quote or ch == "\n":
            raise ValueError("invalid syntax")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError("invalid syntax")
        esc = body[i + 1]
        if esc in _ESCAPES and (esc not in "'\"" or esc == quote):
            out.append(_ESCAPES[esc])
            i += 2
        elif esc in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[esc]
            digits = body[i + 2 : i + 2 + size]
            if len(digits) != size or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise ValueError("invalid syntax")
            code = int(digits, 16)
            if esc != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise ValueError("invalid syntax")
            out.append(chr(code))
            i += 2 + size
        elif esc in "01234567":
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) > 255:
                raise ValueError("invalid syntax")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise ValueError("invalid syntax")
    text = "".join(out)
    if quote == "'" and len(text) != 1:
        raise ValueError("invalid syntax")
    return text


def char_constant(text: str) -> int:
    """The rune of a character literal such as ``'a'`` or ``'\\n'``; ValueError like Go's."""
    try:
        return ord(unquote(text))
    except ValueError:
        pass
    as_string = unquote('"' + text[1:-1] + '"')  # invalid escapes: "invalid syntax"
    if not as_string:
        raise ValueError("invalid syntax")
    raise ValueError(f"malformed character constant: {text}")


def number_constant(text: str) -> int | float | complex:
    """The ideal constant of a number literal, typed as ``text/template`` types it.

    Ints stay ints unless the text looks like a float (``1.0``, ``1e3``); ``1i`` and ``1+2i``
    are complex. ValueError carries Go's parse error reason.
    """
    if text.endswith("i"):
        split = max(text.rfind("+", 1), text.rfind("-", 1))
        if split > 0 and text[split - 1] not in "eEpP":
            real_text, imag_text = text[:split], text[split:-1]
        else:
            real_text, imag_text = "0", text[:-1]
        try:
            return complex(parse_float(real_text), parse_float(imag_text))
        except ValueError:
            raise ValueError(f"illegal number syntax: {go_quote(text)}") from None
    as_int = parse_int(text)
    float_like = any(c in text for c in ".eEpP")
    if as_int is not None:
        hex_int = text[:2] in ("0x", "0X") and not any(c in text for c in "pP")
        return float(as_int) if float_like and not hex_int else as_int
    try:
        as_float = parse_float(text)
    except ValueError:
        raise ValueError(f"illegal number syntax: {go_quote(text)}") from None
    if not float_like:
        raise ValueError(f"integer overflow: {go_quote(text)}")
    return as_float
