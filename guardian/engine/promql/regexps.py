"""Label-matcher regular expressions as Prometheus 2.42 reads them.

``labels.NewFastRegexMatcher`` compiles ``^(?:<value>)$`` with Go's regexp (RE2 syntax, no
``(?s)``), and also parses the bare value, so ``a)|(b`` is refused although its anchored
form compiles. The same Go regexp, on RE2, judges here: what Prometheus refuses at load is
refused with its words, and matching takes linear time.
"""

from __future__ import annotations

from functools import lru_cache

from guardian.engine.golang.regexp import (
    Regexp,
    RegexpError,
    RegexpTooLarge,
    check_syntax,
    compile_regexp,
)


def matcher_regexp(pattern: str) -> Regexp:
    """The regexp a ``=~`` or ``!~`` matcher with ``pattern`` tests label values with."""
    return compile_regexp(f"^(?:{pattern})$")


@lru_cache(maxsize=1024)
def regex_error(pattern: str) -> str | None:
    """Go's complaint about ``pattern`` when Prometheus refuses the matcher, else None."""
    try:
        matcher_regexp(pattern)
        check_syntax(pattern)
    except RegexpTooLarge:
        return None  # RE2's memory budget, not Go's limits: Prometheus judges it
    except RegexpError as exc:
        return str(exc)
    return None


def matches(pattern: str, value: str) -> bool | None:
    """Whether a ``=~`` matcher with ``pattern`` selects ``value``; None when it does not
    compile here (RE2's budget)."""
    try:
        return matcher_regexp(pattern).match_string(value)
    except RegexpError:
        return None


def matches_empty(pattern: str) -> bool | None:
    """Whether the anchored regexp matches the empty string; None when unknown."""
    return matches(pattern, "")
