"""``match`` and ``reReplaceAll`` run Go's regexp (RE2): linear time, Go's syntax and errors.

The parity suites (parity_cases.py, checked against promtool) hold the everyday cases; these
are the ones a backtracking engine or Python's syntax would get wrong.
"""

from __future__ import annotations

import time

import pytest

from guardian.engine.templates import TemplateContext, parse_alert_template

CTX = TemplateContext(labels={"run": "a" * 40, "x": "x" * 40 + "!"}, value=1.0)


def expand(text: str) -> str:
    return parse_alert_template(text, "Probe").expand(CTX)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{{ match "(a|aa)+b" $labels.run }}', "false"),
        ('{{ match "^(a+)+$" (print $labels.run "!") }}', "false"),
        ('{{ match "(x+x+)+y" $labels.x }}', "false"),
        ('{{ reReplaceAll "(a*)*b" "-" $labels.run | len }}', "40"),
        ('{{ reReplaceAll "^(a|a?)+$" "-" $labels.x }}', "x" * 40 + "!"),
    ],
)
def test_catastrophic_patterns_expand_in_linear_time(text: str, expected: str) -> None:
    """Python's re takes minutes or more on each of these; Prometheus microseconds."""
    started = time.monotonic()
    assert expand(text) == expected
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{{ match "^\\\\pL+$" "Straße" }}', "true"),  # Unicode classes are Go syntax
        ('{{ reReplaceAll "\\\\Q.*\\\\E" "!" "a.*b" }}', "a!b"),
        ('{{ reReplaceAll "\\\\B" "-" "ébé" }}', "-ébé-"),  # Go steps by runes
        ('{{ reReplaceAll "(?P<n>a)|(?P<n>b)" "${n}${n}" "ab" }}', "aabb"),
    ],
)
def test_go_syntax_and_semantics(text: str, expected: str) -> None:
    assert expand(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            '{{ match "\\\\C" "x" }}',
            "error calling match: error parsing regexp: invalid escape sequence: `\\C`",
        ),
        (
            '{{ reReplaceAll "(?<n>`" "" "x" }}',
            (
                'error calling reReplaceAll: regexp: Compile("(?<n>`"): error parsing regexp: '
                "invalid or unsupported Perl syntax: `(?<`"
            ),
        ),
    ],
)
def test_what_go_refuses_fails_the_expansion_with_gos_words(text: str, reason: str) -> None:
    assert reason in expand(text)
