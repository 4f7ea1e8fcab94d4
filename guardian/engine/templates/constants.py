"""Number and character constants as ``text/template/parse`` reads them (``NumberNode``)."""

from __future__ import annotations

from guardian.engine.golang.strconv import go_quote, parse_float, parse_int, unquote


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
