"""Go's fmt, strconv and time as guardian.engine.golang mirrors them."""

from __future__ import annotations

import math

import pytest

from guardian.engine.golang.fmt import sprint, sprintf
from guardian.engine.golang.strconv import (
    GoNumError,
    format_go_value,
    go_quote,
    parse_float,
    parse_int,
    unquote,
)
from guardian.engine.golang.time import format_go_time


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1234567.0, "1.234567e+06"),  # the reference's verified examples
        (123456.0, "123456"),
        (0.00001234, "1.234e-05"),
        (999999.0, "999999"),
        (1e6, "1e+06"),
        (1234567.8, "1.2345678e+06"),
        (123456.7, "123456.7"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1e21, "1e+21"),
        (0.1 + 0.2, "0.30000000000000004"),
        (0.0, "0"),
        (-0.0, "-0"),
        (-42.5, "-42.5"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "NaN"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
    ],
)
def test_format_go_value_is_go_percent_v(value: float, text: str) -> None:
    assert format_go_value(value) == text


@pytest.mark.parametrize(
    ("fmt", "args", "text"),
    [
        ("%.4g", (1234567.0,), "1.235e+06"),
        ("%.4g", (0.5,), "0.5"),
        ("%.2f", (math.nan,), "NaN"),
        ("%6.2f", (math.inf,), "  +Inf"),
        ("%06.2f", (-math.inf,), "  -Inf"),
        ("%x", (1.0,), "0x1p+00"),
        ("%.2x", (1.0 / 3,), "0x1.55p-02"),
        ("%d%%", (5,), "5%"),
        ("%s", (None,), "%!s(<nil>)"),
        ("%v %v", ([1, "a"], {"b": "c"}), "[1 a] map[b:c]"),
        ("%", (), "%!(NOVERB)"),
        ("%-5d|%5.1s|", (3, "xyz"), "3    |    x|"),
    ],
)
def test_sprintf(fmt: str, args: tuple[object, ...], text: str) -> None:
    assert sprintf(fmt, *args) == text


def test_sprint_spaces_only_between_non_strings() -> None:
    assert sprint("a", 1, 2, "b", 3.5, None) == "a1 2b3.5 <nil>"


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('q"\\', '"q\\"\\\\"'),
        ("\x00\x7f\n", '"\\x00\\x7f\\n"'),
        ("\u2028é", '"\\u2028é"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted
    assert unquote(quoted) == text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.5", 1.5),
        ("-2e3", -2000.0),
        ("1_000.5", 1000.5),
        ("0x1p-2", 0.25),
        ("+Inf", math.inf),
        ("infinity", math.inf),
        (".5", 0.5),
        ("5.", 5.0),
    ],
)
def test_parse_float_accepts_go_syntax(text: str, value: float) -> None:
    assert parse_float(text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (" 1", "invalid syntax"),
        ("1_", "invalid syntax"),
        ("+nan", "invalid syntax"),
        ("", "invalid syntax"),
        ("0x10", "invalid syntax"),
        ("1e400", "value out of range"),
    ],
)
def test_parse_float_errors_read_like_go(text: str, reason: str) -> None:
    with pytest.raises(GoNumError) as caught:
        parse_float(text)
    assert str(caught.value) == f"strconv.ParseFloat: parsing {go_quote(text)}: {reason}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-7", -7),
        ("0x1F", 31),
        ("017", 15),
        ("0o17", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("9223372036854775808", None),
        ("1.5", None),
        ("08", None),
    ],
)
def test_parse_int_base_zero(text: str, value: int | None) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "1970-01-01 00:00:00 +0000 UTC"),
        (1_500_000_000_123_000_000, "2017-07-14 02:40:00.123 +0000 UTC"),
        (-1, "1969-12-31 23:59:59.999999999 +0000 UTC"),
        (951_782_400 * 10**9, "2000-02-29 00:00:00 +0000 UTC"),
        (253_402_300_800 * 10**9, "10000-01-01 00:00:00 +0000 UTC"),
    ],
)
def test_format_go_time(nanos: int, text: str) -> None:
    assert format_go_time(nanos) == text
