"""Go's ``fmt``: ``Sprint``, ``Sprintln`` and ``Sprintf`` for the values the engine handles.

They follow Go, including the ``%!verb(type=value)`` and ``%!verb(MISSING)`` error forms that
Go writes into the output. Values of Go types without a Python stand-in print through
:mod:`guardian.engine.golang.reflect` (``Stringer``, ``Struct``, ``Nil``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from guardian.engine.golang.reflect import Stringer, Struct, is_nil, type_name
from guardian.engine.golang.strconv import can_backquote, format_float, go_quote


@dataclass
class Spec:
    """One parsed ``%`` directive."""

    minus: bool = False
    plus: bool = False
    sharp: bool = False
    space: bool = False
    zero: bool = False
    width: int | None = None
    prec: int | None = None


def _pad(text: str, spec: Spec, zero_ok: bool = True) -> str:
    if spec.width is None or len(text) >= spec.width:
        return text
    fill = spec.width - len(text)
    if spec.minus:
        return text + " " * fill
    if spec.zero and zero_ok:
        return "0" * fill + text
    return " " * fill + text


def _bad_verb(verb: str, value: object) -> str:
    if is_nil(value):
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(value)}={format_value(value, 'v', Spec(), 0)})"


def _fmt_float(v: float, verb: str, spec: Spec) -> str:
    if verb == "v":
        verb = "g"
    prec = spec.prec if spec.prec is not None else (6 if verb in "eEfF" else -1)
    num = format_float(v, verb, prec)
    if num[0] not in "+-":
        num = "+" + num
    if spec.space and num[0] == "+" and not spec.plus:
        num = " " + num[1:]
    if num[1] in "IN":  # Inf and NaN are never zero-padded; NaN drops its sign.
        if num[1] == "N" and not spec.space and not spec.plus:
            num = num[1:]
        return _pad(num, spec, zero_ok=False)
    if spec.sharp and verb in "gGvx" and "." not in num and "e" not in num.lower()[2:]:
        num += "."
    if spec.plus or num[0] != "+":
        if spec.zero and not spec.minus and spec.width is not None and spec.width > len(num):
            return num[0] + "0" * (spec.width - len(num)) + num[1:]
        return _pad(num, spec)
    return _pad(num[1:], spec)


def _fmt_int(n: int, verb: str, spec: Spec) -> str:
    if verb == "c":
        return _pad(chr(n) if 0 <= n <= 0x10FFFF else "\ufffd", spec)
    if verb == "q":
        return _pad("'" + go_quote(chr(n) if 0 <= n <= 0x10FFFF else "\ufffd")[1:-1] + "'", spec)
    if verb == "U":
        return _pad(f"U+{n:04X}", spec)
    base = {"d": 10, "v": 10, "b": 2, "o": 8, "O": 8, "x": 16, "X": 16}[verb]
    negative = n < 0
    digits = {2: "b", 8: "o", 10: "d", 16: "x"}[base]
    body = format(abs(n), digits)
    if verb == "X":
        body = body.upper()
    if spec.prec is not None:
        if spec.prec == 0 and n == 0:
            return " " * (spec.width or 0)
        body = body.rjust(spec.prec, "0")
    elif spec.zero and not spec.minus and spec.width is not None:
        room = spec.width - (1 if (negative or spec.plus or spec.space) else 0)
        body = body.rjust(room, "0")
    if spec.sharp:
        if base == 2:
            body = "0b" + body
        elif base == 8 and not body.startswith("0"):
            body = "0" + body
        elif base == 16:
            body = ("0X" if verb == "X" else "0x") + body
    if verb == "O":
        body = "0o" + body
    if negative:
        body = "-" + body
    elif spec.plus:
        body = "+" + body
    elif spec.space:
        body = " " + body
    return _pad(body, spec, zero_ok=False)


def _fmt_str(text: str, verb: str, spec: Spec) -> str:
    if verb in "vs":
        if spec.prec is not None:
            text = text[: spec.prec]
        return _pad(text, spec)
    if verb == "q":
        if spec.prec is not None:
            text = text[: spec.prec]
        if spec.sharp and can_backquote(text):
            return _pad("`" + text + "`", spec)
        return _pad(go_quote(text), spec)
    data = text.encode()
    if spec.prec is not None:
        data = data[: spec.prec]
    hexes = [format(b, "02X" if verb == "X" else "02x") for b in data]
    prefix = ("0X" if verb == "X" else "0x") if spec.sharp else ""
    if spec.space:
        return _pad(" ".join(prefix + h for h in hexes), spec)
    return _pad(prefix + "".join(hexes), spec)


# After bool (a bool is also an int): each type, the verbs it takes, how it prints. Go's
# %b for floats (a binary exponent) is not supported: a bad verb here.
_SCALARS: tuple[tuple[type, str, Callable[[Any, str, Spec], str]], ...] = (
    (int, "vdbboOxXcqU", _fmt_int),
    (float, "vgGxXfFeE", _fmt_float),
    (str, "vsqxX", _fmt_str),
)


def format_value(value: object, verb: str, spec: Spec, depth: int) -> str:
    """Format one operand as ``fmt`` would for ``verb``."""
    if verb == "T":
        return _pad(type_name(value), spec)
    if is_nil(value):
        return _pad("<nil>", spec) if verb == "v" else _bad_verb(verb, value)
    if isinstance(value, bool):
        if verb in "tv":
            return _pad("true" if value else "false", spec)
        return _bad_verb(verb, value)
    for python_type, verbs, fmt_scalar in _SCALARS:
        if isinstance(value, python_type):
            return fmt_scalar(value, verb, spec) if verb in verbs else _bad_verb(verb, value)
    if isinstance(value, complex):
        if verb in "vgGxXfFeE":
            imag_spec = Spec(plus=True, prec=spec.prec, sharp=spec.sharp)
            real_spec = Spec(plus=spec.plus, space=spec.space, prec=spec.prec, sharp=spec.sharp)
            body = _fmt_float(value.real, verb, real_spec) + _fmt_float(value.imag, verb, imag_spec)
            return _pad(f"({body}i)", spec, zero_ok=False)
        return _bad_verb(verb, value)
    if isinstance(value, Stringer):
        if verb in "vsqxX":
            return _fmt_str(value.go_string(), verb, spec)
        return _bad_verb(verb, value)
    if isinstance(value, dict):
        parts = [
            f"{format_value(key, verb, spec, depth + 1)}:"
            f"{format_value(value[key], verb, spec, depth + 1)}"
            for key in sorted(value)
        ]
        return "map[" + " ".join(parts) + "]"
    if isinstance(value, Struct):
        fields = " ".join(format_value(f, verb, spec, depth + 1) for f in value.go_fields())
        return ("&{" if value.pointer else "{") + fields + "}"
    if isinstance(value, list):
        return "[" + " ".join(format_value(item, verb, spec, depth + 1) for item in value) + "]"
    return _bad_verb(verb, value)


def sprint(*args: object) -> str:
    """``fmt.Sprint``: a space between operands when neither is a string."""
    out: list[str] = []
    prev_string = False
    for i, arg in enumerate(args):
        is_string = isinstance(arg, str)
        if i > 0 and not is_string and not prev_string:
            out.append(" ")
        out.append(format_value(arg, "v", Spec(), 0))
        prev_string = is_string
    return "".join(out)


def sprintln(*args: object) -> str:
    """``fmt.Sprintln``: operands separated by spaces, then a newline."""
    return " ".join(format_value(a, "v", Spec(), 0) for a in args) + "\n"


def _parse_num(fmt: str, i: int) -> tuple[int | None, int]:
    start = i
    while i < len(fmt) and fmt[i].isdigit():
        i += 1
    if i == start:
        return None, i
    return int(fmt[start:i]), i


class _Directive:
    """Reads the flags, width and precision of one ``%`` directive, taking ``*`` operands."""

    def __init__(self, fmt: str, args: tuple[object, ...], arg_num: int, out: list[str]) -> None:
        self.fmt = fmt
        self.args = args
        self.arg_num = arg_num
        self.out = out  # where %!(BADWIDTH) and %!(BADPREC) go, as Go writes them

    def star(self) -> int | None:
        """The int operand a ``*`` takes; None (and the operand used up) when it is not one."""
        value = self.args[self.arg_num] if self.arg_num < len(self.args) else None
        self.arg_num += 1
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def read(self, i: int) -> tuple[Spec, int]:
        fmt, end = self.fmt, len(self.fmt)
        spec = Spec()
        while i < end and fmt[i] in "#0+- ":
            flag = fmt[i]
            if flag == "#":
                spec.sharp = True
            elif flag == "0":
                spec.zero = not spec.minus
            elif flag == "+":
                spec.plus = True
            elif flag == "-":
                spec.minus, spec.zero = True, False
            else:
                spec.space = True
            i += 1
        width, _, i = self.number(i, "%!(BADWIDTH)")
        if width is not None and width < 0:  # only a * operand is negative: left-justify
            spec.minus, spec.zero, spec.width = True, False, -width
        else:
            spec.width = width
        if i < end and fmt[i] == ".":
            prec, starred, i = self.number(i + 1, "%!(BADPREC)")
            if starred:  # a negative * precision means none, as in Go
                spec.prec = prec if prec is not None and prec >= 0 else None
            else:
                spec.prec = prec or 0  # "%.f": precision 0
        return spec, i

    def number(self, i: int, bad: str) -> tuple[int | None, bool, int]:
        """The width or precision at ``i``: a ``*`` operand (``bad`` written when it is not
        an int) or digits. Returns it (None: not given), whether it was a ``*``, and the
        index after it."""
        if self.fmt.startswith("*", i):
            value = self.star()
            if value is None:
                self.out.append(bad)
            return value, True, i + 1
        value, i = _parse_num(self.fmt, i)
        return value, False, i


def sprintf(fmt: str, *args: object) -> str:
    """``fmt.Sprintf`` for the verbs templates use (no explicit argument indexes)."""
    out: list[str] = []
    directive = _Directive(fmt, args, 0, out)
    i = 0
    while i < len(fmt):
        pct = fmt.find("%", i)
        if pct < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:pct])
        spec, i = directive.read(pct + 1)
        if i >= len(fmt):
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            out.append("%")
        elif directive.arg_num >= len(args):
            out.append(f"%!{verb}(MISSING)")
        else:
            out.append(format_value(args[directive.arg_num], verb, spec, 0))
            directive.arg_num += 1
    if directive.arg_num < len(args):
        extra = [
            "<nil>" if a is None else f"{type_name(a)}={format_value(a, 'v', Spec(), 0)}"
            for a in args[directive.arg_num :]
        ]
        out.append("%!(EXTRA " + ", ".join(extra) + ")")
    return "".join(out)


def format_v(value: object) -> str:
    """``%v`` of one value."""
    return format_value(value, "v", Spec(), 0)
