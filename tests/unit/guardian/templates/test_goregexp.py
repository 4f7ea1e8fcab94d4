"""RE2 semantics on Python's re: the differences that matter for reReplaceAll and match."""

from __future__ import annotations

import pytest

from guardian.engine.templates.errors import FuncError
from guardian.engine.templates.goregexp import compile_go, must_compile, replace_all


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("a$", "a\n", False),  # RE2 $ is end of text without (?m)
        ("(?m)a$", "a\nb", True),
        ("a\\z", "a", True),
        ("[[:digit:]]+x", "12x", True),
        ("[[:alpha:]_]", "_", True),
        ("[]a]", "]", True),
        ("[^]a]", "b", True),
        ("\\d", "٣", False),  # ASCII digits only, as in RE2
        ("(?i)gpu", "GPU-1", True),
    ],
)
def test_match_semantics(pattern: str, text: str, matches: bool) -> None:
    assert (compile_go(pattern).search(text) is not None) is matches


@pytest.mark.parametrize(
    ("pattern", "src", "repl", "out"),
    [
        ("x*", "abxd", "-", "-a-b-d-"),  # Go skips an empty match right after a match
        ("(a)(b)?", "ab a", "<$2$1>", "<ba> <a>"),
        ("(?P<word>\\w+)", "hi", "${word}!", "hi!"),
        ("(a)", "a", "$1x", ""),  # $1x names group "1x", which does not exist
        ("(a)", "a", "$$1", "$1"),
        ("(a)", "a", "${1", "${1"),  # malformed reference stays literal
        ("(a)", "a", "$01", ""),  # no leading zeros in group numbers
    ],
)
def test_replace_all_like_go(pattern: str, src: str, repl: str, out: str) -> None:
    assert replace_all(compile_go(pattern), src, repl) == out


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "error parsing regexp: missing closing ): `(`"),
        ("a)", "error parsing regexp: unexpected ): `a)`"),
        ("*", "error parsing regexp: missing argument to repetition operator: `*`"),
        ("[a", "error parsing regexp: missing closing ]: `[a`"),
        ("\\pL", "error parsing regexp: Unicode classes (\\p, \\P) are not supported: `\\pL`"),
    ],
)
def test_compile_errors_read_like_go(pattern: str, message: str) -> None:
    with pytest.raises(FuncError) as caught:
        compile_go(pattern)
    assert str(caught.value) == message
    with pytest.raises(FuncError, match=r"^regexp: Compile\("):
        must_compile(pattern)
