"""Go's regexp on RE2: Go 1.19's syntax and errors, its matching, ReplaceAllString and Expand.

Every error text below was checked with Prometheus 2.42's promtool (Go 1.19), as were the
verdicts of tests/fixtures/promql/regexps.json (tests/integration/engine/test_regexp_oracle.py
re-checks those).
"""

from __future__ import annotations

import time

import pytest

from guardian.engine.golang.regexp import (
    RegexpError,
    RegexpTooLarge,
    compile_regexp,
    must_compile,
    quote_meta,
)

# Exponential for a backtracking engine (Python's re) on a run of 40 letters that does not
# match in the end; linear in RE2.
CATASTROPHIC = [
    ("(a+)+$", "a" * 40 + "!"),
    ("(a|aa)+b", "a" * 40),
    ("(a*)*b", "a" * 40),
    ("(x+x+)+y", "x" * 40),
    ("^(a|a?)+$", "a" * 40 + "!"),
]


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("a$", "a\n", False),  # $ is the end of the text without (?m)
        ("(?m)a$", "a\nb", True),
        ("a\\z", "a", True),
        ("[[:digit:]]+x", "12x", True),
        ("[[:alpha:]_]", "_", True),
        ("[]a]", "]", True),
        ("[^]a]", "b", True),
        ("\\d", "٣", False),  # ASCII digits only
        ("(?i)gpu", "GPU-1", True),
        ("\\pL", "é", True),  # Unicode classes, which Python's re cannot read
        ("\\p{Greek}+", "αβγ", True),
        ("\\Qa.b\\E", "a.b", True),
        ("\\Qa.b\\E", "axb", False),
        ("\\x{1F600}", "😀", True),
        ("(?i)k", "\u212a", True),  # Kelvin sign folds to k, as in Go
        ("a.c", "a\nc", False),
        ("(?s)a.c", "a\nc", True),
        ("\\B", "aéa", False),  # RE2 sees a non-boundary inside é; Go steps by runes
        ("é\\b", "é", False),  # \b is ASCII
    ],
)
def test_match_semantics(pattern: str, text: str, matches: bool) -> None:
    assert compile_regexp(pattern).match_string(text) is matches


@pytest.mark.parametrize(
    ("pattern", "src", "repl", "out"),
    [
        ("x*", "abxd", "-", "-a-b-d-"),  # an empty match right after a match is skipped
        ("(a)(b)?", "ab a", "<$2$1>", "<ba> <a>"),
        ("(?P<word>\\w+)", "hi", "${word}!", "hi!"),
        ("(a)", "a", "$1x", ""),  # $1x names group "1x", which does not exist
        ("(a)", "a", "$$1", "$1"),
        ("(a)", "a", "${1", "${1"),  # a malformed reference stays literal
        ("(a)", "a", "$01", ""),  # no leading zeros in group numbers
        (
            "(?P<n>a)|(?P<n>b)",
            "ab",
            "[${n}]",
            "[a][b]",
        ),  # the first group of the name that took part
        ("", "éa", ".", ".é.a."),  # empty matches step over whole runes
        ("\\B", "ébé", "<>", "<>ébé<>"),
        ("(a)", "a", "$1²", "a²"),  # ² is a digit to Python, not to Go's unicode.IsDigit
    ],
)
def test_replace_all_like_go(pattern: str, src: str, repl: str, out: str) -> None:
    assert compile_regexp(pattern).replace_all_string(src, repl) == out


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "missing closing ): `(`"),
        ("a)", "unexpected ): `a)`"),
        ("*", "missing argument to repetition operator: `*`"),
        ("[a", "missing closing ]: `[a`"),
        ("a**", "invalid nested repetition operator: `**`"),
        ("x{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
        ("a{2,1001}", "invalid repeat count: `{2,1001}`"),
        ("\\", "trailing backslash at end of expression: ``"),
        ("\\8", "invalid escape sequence: `\\8`"),
        ("\\x{110000}", "invalid escape sequence: `\\x{110000`"),
        ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
        ("\\p{Lc}", "invalid character class range: `\\p{Lc}`"),
        ("(?z)", "invalid or unsupported Perl syntax: `(?z`"),
        ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        ("(?P<>a)", "invalid named capture: `(?P<>`"),
        ("(?P<n", "invalid named capture: `(?P<n`"),  # RE2 quotes `(?P<n` too, Go the rest
        # RE2 accepts these, Go 1.19 refuses them:
        ("\\C", "invalid escape sequence: `\\C`"),
        ("a\\Cb(", "invalid escape sequence: `\\C`"),  # before the missing ), as Go reads
        ("(?<n>a)", "invalid or unsupported Perl syntax: `(?<`"),
        ("(?<=a)", "invalid or unsupported Perl syntax: `(?<`"),  # RE2 says `(?<=`
        ("(?P<é>a)", "invalid named capture: `(?P<é>`"),
        ("\\p{Kawi}", "invalid character class range: `\\p{Kawi}`"),  # Unicode 15
        ("[\\P{^Vithkuqi}]", "invalid character class range: `\\P{^Vithkuqi}`"),  # 14
        # ...and an error RE2 finds first stays first.
        ("(*)\\C", "missing argument to repetition operator: `*`"),
    ],
)
def test_compile_errors_read_like_go(pattern: str, message: str) -> None:
    with pytest.raises(RegexpError) as caught:
        compile_regexp(pattern)
    assert str(caught.value) == f"error parsing regexp: {message}"


@pytest.mark.parametrize(
    "pattern", ["\\Q\\C\\E", "(?P<n>a)(?P<n>b)", "\\p{Greek}", "^*", "\\b*", "(?i-s:a)", "x{,3}"]
)
def test_what_go_accepts_compiles(pattern: str) -> None:
    compile_regexp(pattern)


def test_nesting_deeper_than_go_allows_is_refused_with_the_whole_expression() -> None:
    # Go's parse tree: ^, 998 captures and the literal, $ in a concatenation: height 1000.
    ok = "^(?:" + "(" * 998 + "a" + ")" * 998 + ")$"
    deep = "^(?:" + "(" * 999 + "a" + ")" * 999 + ")$"
    compile_regexp(ok)
    with pytest.raises(RegexpError) as caught:
        compile_regexp(deep)
    assert str(caught.value) == f"error parsing regexp: expression nests too deeply: `{deep}`"
    compile_regexp("(?:a*" * 1200 + ")" * 1200)  # flattened concatenations stay shallow


def test_an_expression_larger_than_go_allows_is_refused() -> None:
    compile_regexp("x{1000}" * 3350)  # 3.35M instructions: within Go's 3.36M
    with pytest.raises(RegexpError, match=r"^error parsing regexp: regexp/syntax: internal error"):
        compile_regexp("x{1000}" * 3360)


def test_a_program_over_re2s_budget_is_told_apart_from_gos_refusals() -> None:
    with pytest.raises(RegexpTooLarge, match="RE2's memory budget"):
        compile_regexp("\\pL{1000}" * 4)  # Go compiles it; RE2 needs over 64 MiB


def test_a_pattern_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(RegexpError, match=r"^error parsing regexp: invalid UTF-8: `\udcffb`$"):
        compile_regexp("a\udcffb")  # PromQL keeps a \xff byte as surrogateescape


def test_texts_with_lone_surrogates_do_not_break_matching() -> None:
    regexp = compile_regexp("(a)(.)?")
    assert regexp.match_string("\ud800a")
    assert regexp.replace_all_string("a\udcff", "<$1>") == "<a>\udcff"


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "regexp: Compile(`(`): error parsing regexp: missing closing ): `(`"),
        ("(`", 'regexp: Compile("(`"): error parsing regexp: missing closing ): `(``'),
        ("\n(", 'regexp: Compile("\\n("): error parsing regexp: missing closing ): `\n(`'),
    ],
)
def test_must_compile_panics_with_the_pattern_quoted_like_go(pattern: str, message: str) -> None:
    with pytest.raises(RegexpError) as caught:
        must_compile(pattern)
    assert str(caught.value) == message


def test_quote_meta_escapes_what_go_escapes() -> None:
    assert (
        quote_meta("a.b*c{1}|[x]^$\\(?)+-_é")
        == "a\\.b\\*c\\{1\\}\\|\\[x\\]\\^\\$\\\\\\(\\?\\)\\+-_é"
    )
    assert compile_regexp(f"^{quote_meta('GpuIdle.x(1)')}$").match_string("GpuIdle.x(1)")


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_catastrophic_patterns_run_in_linear_time(pattern: str, text: str) -> None:
    """Python's re takes minutes or more on these; RE2 answers at once."""
    regexp = compile_regexp(pattern)
    started = time.monotonic()
    assert not regexp.match_string(text)
    assert regexp.fullmatch(text) is None
    assert regexp.replace_all_string(text * 50, "-") == text * 50
    assert time.monotonic() - started < 2.0
