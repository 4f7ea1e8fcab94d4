"""Label-matcher regexps as Prometheus 2.42 judges them, on Go's regexp (RE2).

``tests/fixtures/promql/regexps.json`` holds promtool 2.42's verdict on each pattern of a
hand-written corpus and of random token soups (``x{a=~"<pattern>"}`` in a rule file);
tests/integration/engine/test_regexp_oracle.py re-checks it against promtool.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from guardian.engine.promql import PromQLError, parse_expr
from guardian.engine.promql.regexps import matcher_regexp, matches, matches_empty, regex_error

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "promql" / "regexps.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))


def selector(pattern: str) -> str:
    return "x{a=~" + json.dumps(pattern, ensure_ascii=False) + "}"


def test_the_recorded_cases_cover_both_verdicts() -> None:
    assert sum(c["error"] is None for c in CASES) > 150
    assert sum(c["error"] is not None for c in CASES) > 250


@pytest.mark.parametrize("case", CASES, ids=lambda c: repr(c["pattern"]))
def test_verdicts_are_prometheus_verdicts(case: dict[str, Any]) -> None:
    assert regex_error(case["pattern"]) == case["error"]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "missing closing ): `^(?:()$`"),  # the anchored form fails first
        ("a)|(b", "unexpected ): `a)|(b`"),  # its anchored form compiles; the bare one not
        ("\\C", "invalid escape sequence: `\\C`"),  # RE2 accepts \C, Go does not
        ("(?<n>a)", "invalid or unsupported Perl syntax: `(?<`"),  # Go 1.22 syntax
    ],
)
def test_the_parser_refuses_with_gos_words_at_the_label(pattern: str, message: str) -> None:
    with pytest.raises(PromQLError) as caught:
        parse_expr(selector(pattern))
    assert str(caught.value) == f"1:3: parse error: error parsing regexp: {message}"


def test_a_matcher_over_re2s_budget_is_left_to_prometheus() -> None:
    assert regex_error("\\pL{1000}" * 4) is None  # promtool accepts it
    assert matches("\\pL{1000}" * 4, "x") is None


def test_the_selector_check_uses_the_anchored_regexp() -> None:
    assert matches_empty("a|") is True
    assert matches_empty("a") is False
    assert matches_empty("(?s).*") is True
    with pytest.raises(PromQLError, match="at least one non-empty matcher"):
        parse_expr('{a=~"a|", b!~"b"}')
    parse_expr('{a=~"a"}')


def test_matchers_are_anchored_and_dot_stops_at_newline() -> None:
    assert matches("b", "abc") is False  # ^(?:b)$
    assert matches("a|b", "b") is True
    assert matches(".*", "a\nb") is False  # no (?s) for matchers in 2.42
    assert matches("(?s).*", "a\nb") is True
    assert matcher_regexp("x").pattern == "^(?:x)$"


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+b", "(a*)*b", "^(a|a?)+$"])
def test_a_catastrophic_matcher_is_judged_in_linear_time(pattern: str) -> None:
    """Backtracking takes minutes on 40 "a"s; Prometheus (and this) take microseconds."""
    started = time.monotonic()
    assert regex_error(pattern) is None
    expr = parse_expr(selector(pattern) + " > 0")
    assert expr is not None
    assert matches(pattern, "a" * 40 + "!") is False
    assert time.monotonic() - started < 2.0
