"""Kubernetes resource quantities ("500m", "2", "1Gi", "1e9", "129M"), read without loss.

The grammar is apimachinery's ``resource.Quantity``: a signed decimal number, then a
binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (m "" k M G T P E) or a decimal
exponent (e3, E-2). The scheduler compares ``cpu`` in millicores and everything else in
whole units, each rounded up (``MilliValue`` and ``Value``); ``amount`` does the same.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(rf"({_NUMBER})(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|m|k|M|G|T|P|E)?")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
MILLI_RESOURCES = frozenset({"cpu"})


def parse_quantity(text: object) -> Fraction | None:
    """The exact value of a quantity; None when ``text`` is not one. A number (a JSON
    integer where a client did not quote it) reads as its decimal form."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return None
    match = _QUANTITY.fullmatch(str(text).strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * (1 << (10 * _BINARY[suffix]))
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    scale = Fraction(10) ** exponent
    return number * scale


def amount(resource: str, text: object) -> int | None:
    """``text`` as the scheduler counts ``resource``: millicores for cpu, whole units for
    the rest, rounded up; None when it is not a quantity or is negative."""
    value = parse_quantity(text)
    if value is None or value < 0:
        return None
    return math.ceil(value * 1000) if resource in MILLI_RESOURCES else math.ceil(value)


def show(resource: str, value: int) -> str:
    """An amount as people write it: cpu ``500m`` or ``2``, memory ``4Gi``, devices ``1``."""
    if resource in MILLI_RESOURCES:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
        unit = 1024**power
        if value and value % unit == 0 and resource in ("memory", "ephemeral-storage"):
            return f"{value // unit}{suffix}"
    return str(value)
