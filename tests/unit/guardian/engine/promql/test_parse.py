"""Parser behaviour beyond the recorded corpus: positions, types, leniency, bytes."""

from __future__ import annotations

import pytest

from guardian.engine.promql import PromQLError, ValueType, metric_names, parse_expr, printed
from guardian.engine.promql.ast import BinaryExpr, Card, UnaryExpr, value_type
from guardian.engine.promql.printer import format_duration


def test_errors_name_line_and_column() -> None:
    with pytest.raises(PromQLError) as info:
        parse_expr('sum(\n  rate(x[5m])\n) by (a) + on(b) "x"')

    assert str(info.value) == (
        "3:18: parse error: binary expression must contain only scalar and instant vector types"
    )

    with pytest.raises(PromQLError, match=r"^2:5: parse error: unknown function"):
        parse_expr("up\n  + nosuch(up)")


def test_absent_matchers_are_sorted_as_rendered_text() -> None:
    # Byte order of the whole matcher text: `!=`/`!~` < `=` < `=~`, upper case first.
    assert (
        printed('absent(m{job=~".+", job="api", job!="x", Job="y"})')
        == 'absent(m{Job="y",job!="x",job="api",job=~".+"})'
    )


def test_ignoring_with_group_left_prints_as_one_to_one_as_in_prometheus() -> None:
    expr = parse_expr("a * ignoring() group_left b")

    assert isinstance(expr, BinaryExpr)
    assert expr.matching is not None
    assert expr.matching.card is Card.MANY_TO_ONE
    assert printed("a * ignoring() group_left b") == "a * b"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("up", ValueType.VECTOR),
        ("up[5m]", ValueType.MATRIX),
        ("rate(up[5m])[10m:]", ValueType.MATRIX),
        ("1 + 2", ValueType.SCALAR),
        ("1 + up", ValueType.VECTOR),
        ("scalar(up)", ValueType.SCALAR),
        ('"text"', ValueType.STRING),
        ("-(time())", ValueType.SCALAR),
    ],
)
def test_value_types(text: str, kind: ValueType) -> None:
    assert value_type(parse_expr(text)) is kind


def test_unary_minus_folds_into_a_number_but_not_into_parentheses() -> None:
    assert printed("- -2") == "2"
    assert isinstance(parse_expr("-(2)"), UnaryExpr)
    assert printed("-2 ^ 2") == "-2 ^ 2"  # -(2 ^ 2): the minus is not part of the number


@pytest.mark.parametrize(
    "pattern",
    [
        r"\\p{L}+",
        r"\\pN",
        r"\\Qa.b\\E",
        r"\\x{41}",
        "[[:^alpha:]]",
        "(?U)a+",
        "a(?i)b",
        "^*",
        r"\\b*",
    ],
)
def test_go_regexps_that_python_cannot_read_are_accepted(pattern: str) -> None:
    parse_expr(f'up{{job=~"{pattern}"}}')


@pytest.mark.parametrize("pattern", ["(", "a)|(b", "*", "a**", "[z-a]", "[a", "a{2,1}"])
def test_regexps_go_refuses_are_refused(pattern: str) -> None:
    with pytest.raises(PromQLError, match="error parsing regexp"):
        parse_expr(f'up{{job=~"{pattern}"}}')


def test_byte_escapes_that_are_not_utf8_print_back_as_bytes() -> None:
    assert printed(r'up{a="\xff\101"}') == r'up{a="\xffA"}'
    assert printed(r'up{a="\xc3\xa9"}') == 'up{a="é"}'


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0s"), (1, "1ms"), (90_000, "1m30s"), (8 * 86_400_000, "8d"), (14 * 86_400_000, "2w")],
)
def test_durations_print_like_prometheus_common(ms: int, text: str) -> None:
    assert format_duration(ms) == text


def test_metric_names_come_from_selectors_not_strings() -> None:
    text = 'label_replace(a, "dst", "b", "src", "c") + on() {__name__="d"} + e:rate5m'

    assert metric_names(text) == {"a", "d", "e:rate5m"}


def test_timestamps_round_half_away_from_zero_to_milliseconds() -> None:
    assert printed("x @ 1.2345") == "x @ 1.235"
    assert printed("x @ -1.2345") == "x @ -1.235"
