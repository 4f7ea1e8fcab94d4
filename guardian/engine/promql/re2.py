"""Which label-matcher regular expressions to refuse at load, and which match "".

Prometheus compiles ``^(?:<value>)$`` with Go's RE2 and refuses the expression when that
fails. Python's ``re`` differs from RE2 in places (``\\p{…}``, ``\\Q…\\E``, ``\\x{…}``,
POSIX classes, flags), so a pattern is refused only for the structural errors on which
both engines agree (unbalanced parentheses or brackets, a repetition of nothing, a
nested repetition, a bad range, a trailing backslash). Anything else that Python cannot
read is let through, for Prometheus to judge at query time: refusing a valid rule file
would be worse than accepting an invalid one.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

from guardian.engine.templates.errors import FuncError
from guardian.engine.templates.goregexp import compile_go

# Constructs whose validity differs between RE2 and Python: no verdict on such patterns.
_DIVERGENT = re.compile(r"\\[pPQEzCx]|\[\[:|\(\?[a-zA-Z]*U")
_CERTAIN = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("unterminated character set", "missing closing ]"),
    ("bad character range", "invalid character class range"),
    ("bad escape (end of pattern)", "trailing backslash at end of expression"),
    ("min repeat greater than max repeat", "invalid repeat count"),
)


@lru_cache(maxsize=1024)
def regex_error(pattern: str) -> str | None:
    """Go's complaint about ``pattern`` when RE2 certainly refuses it, else None."""
    if _DIVERGENT.search(pattern):
        return None
    # Prometheus compiles the anchored pattern and also parses the bare one.
    return _error(f"^(?:{pattern})$", pattern) or _error(pattern, pattern)


def _error(compiled: str, pattern: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(compiled)
    except re.error as exc:
        message = str(exc.msg)
        if message == "nothing to repeat" and _repeats_nothing(exc):
            return f"error parsing regexp: missing argument to repetition operator: `{pattern}`"
        for python_text, go_text in _CERTAIN:
            if message.startswith(python_text):
                return f"error parsing regexp: {go_text}: `{pattern}`"
    except RecursionError:
        return None
    return None


def _repeats_nothing(exc: re.error) -> bool:
    # `*a`, `(*)`, `a|*`: nothing at all before the operator. Go accepts `^*` and `\b*`,
    # which Python also calls "nothing to repeat".
    text, pos = exc.pattern, exc.pos
    if not isinstance(text, str) or pos is None:
        return False
    before = text[:pos]
    if before.endswith("(?:"):
        return True
    return before[-1:] in ("(", "|") and not before.endswith("\\" + before[-1:])


@lru_cache(maxsize=1024)
def matches_empty(pattern: str) -> bool | None:
    """Whether the anchored regexp matches the empty string; None when unknown."""
    try:
        return compile_go(f"^(?:{pattern})$").match("") is not None
    except FuncError:
        return None
