"""Go's ``strconv.FormatFloat`` for float64, the part ``fmt`` and templates rely on."""

from __future__ import annotations

import math


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
