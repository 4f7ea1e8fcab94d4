"""Go's ``strconv``: ``Quote``, ``CanBackquote``, ``Unquote``, ``ParseFloat``, ``ParseInt``
(base 0) and ``FormatFloat`` for float64, as ``fmt``, templates and PromQL rely on them."""

from __future__ import annotations

import math
import re


def go_quote(text: str) -> str:
    """``strconv.Quote``: a double-quoted Go string literal."""
    out = ['"']
    simple = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        "\\": "\\\\",
        '"': '\\"',
    }
    for ch in text:
        code = ord(ch)
        if ch in simple:
            out.append(simple[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == " " or (ch.isprintable() and not 0xD800 <= code <= 0xDFFF):
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def can_backquote(text: str) -> bool:
    """``strconv.CanBackquote``: ``text`` can be written as a raw (backquoted) string."""
    return all(ch == "\t" or (ch.isprintable() and ch != "`") for ch in text)


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


def split_quotes(quoted: str) -> tuple[str, str]:
    """The quote and the body of a "…", `…` or '…' literal; ValueError("invalid syntax")
    when the quotes do not match or a raw (`…`) one holds a backquote."""
    if len(quoted) < 2 or quoted[0] != quoted[-1] or quoted[0] not in "\"'`":
        raise ValueError("invalid syntax")
    quote, body = quoted[0], quoted[1:-1]
    if quote == "`" and "`" in body:
        raise ValueError("invalid syntax")
    return quote, body


def unquote(quoted: str) -> str:
    """``strconv.Unquote`` for "…", `…` and '…' literals; ValueError("invalid syntax")."""
    quote, body = split_quotes(quoted)
    if quote == "`":
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


def _shortest_digits(v: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of ``|v|`` (v finite, non-zero) and the point position.

    ``|v| == 0.<digits> * 10**dp``. Python's ``repr`` and Go both pick the shortest digit string
    that reads back to the same float, and the closest one on ties, so the digits agree.
    """
    text = repr(abs(v))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # Position of the decimal point relative to the first significant digit.
    dp = len(int_part) + exponent
    leading_zeros = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    dp -= leading_zeros
    digits = digits.rstrip("0") or "0"
    return digits, dp


def _exp_suffix(exp: int, letter: str) -> str:
    sign = "-" if exp < 0 else "+"
    return f"{letter}{sign}{abs(exp):02d}"


def _fmt_e(digits: str, dp: int, letter: str) -> str:
    body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return body + _exp_suffix(dp - 1, letter)


def _fmt_f(digits: str, dp: int) -> str:
    if dp <= 0:
        return "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _special(v: float) -> str | None:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return None


def _hex_float(v: float, prec: int, upper: bool) -> str:
    """``%x`` of a float: ``-0x1.8p+01``; shortest mantissa when ``prec`` < 0."""
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    v = abs(v)
    if v == 0:
        mant, exp = "0", 0
        frac = "0" * prec if prec > 0 else ""
    else:
        text = v.hex()  # e.g. 0x1.8000000000000p+1 (subnormals: 0x0.…p-1022)
        mant_text, _, exp_text = text[2:].partition("p")
        exp = int(exp_text)
        lead, _, frac = mant_text.partition(".")
        if lead == "0":  # normalise subnormals to a leading 1
            bits = int(frac, 16)
            shift = bits.bit_length() - 1
            exp -= 52 - shift
            frac = format((bits - (1 << shift)) << (52 - shift), "013x")
        mant = "1"
        if prec < 0:
            frac = frac.rstrip("0")
        else:
            bits = int(frac or "0", 16)
            if prec < 13:
                drop = (13 - prec) * 4
                rounded = (bits + (1 << (drop - 1))) >> drop
                if (bits & ((1 << drop) - 1)) == (1 << (drop - 1)):
                    rounded = (bits >> drop) + ((bits >> drop) & 1)  # ties to even
                if rounded >> (prec * 4):
                    mant, rounded, exp = "1", 0, exp + 1
                frac = format(rounded, f"0{prec}x") if prec else ""
            else:
                frac = frac + "0" * (prec - 13)
    out = f"{sign}0x{mant}" + (f".{frac}" if frac else "") + _exp_suffix(exp, "p")
    return out.upper() if upper else out


def format_float(v: float, fmt: str = "g", prec: int = -1) -> str:
    """``strconv.FormatFloat(v, fmt, prec, 64)`` for ``fmt`` in e E f F g G x X."""
    special = _special(v)
    if special is not None:
        return special
    if fmt in "xX":
        return _hex_float(v, prec, fmt == "X")
    if prec >= 0:
        # Python rounds the exact binary value half-to-even, as Go's strconv does.
        if fmt in "gG":
            return f"{v:.{max(prec, 1)}{fmt}}"
        return f"{v:.{prec}{'f' if fmt == 'F' else fmt}}"
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    if v == 0:
        if fmt in "eE":
            return f"{sign}0{_exp_suffix(0, fmt)}"
        digits, dp = "0", 1
    else:
        digits, dp = _shortest_digits(v)
    if fmt in "eE":
        return sign + _fmt_e(digits, dp, fmt)
    if fmt in "fF":
        return sign + _fmt_f(digits, dp)
    # 'g' with the shortest digits: exponent form when exp < -4 or exp >= 6 (Go's eprec = 6).
    exp = dp - 1
    if v != 0 and (exp < -4 or exp >= 6):
        return sign + _fmt_e(digits, dp, "e" if fmt == "g" else "E")
    return sign + _fmt_f(digits, dp)


def format_go_value(v: float) -> str:
    """A float64 as Go's ``%v`` prints it: ``1.234567e+06``, ``123456``, ``1.234e-05``, ``+Inf``."""
    return format_float(v, "g", -1)
