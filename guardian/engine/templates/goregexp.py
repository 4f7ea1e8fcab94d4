"""Go RE2 regular expressions on Python's ``re``: syntax translation and ``ReplaceAllString``."""

from __future__ import annotations

import re
from functools import lru_cache

from guardian.engine.templates.errors import FuncError

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}

# Python's messages for the errors RE2 reports most often, in Go's words.
_GO_MESSAGES = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("unterminated character set", "missing closing ]"),
    ("bad character range", "invalid character class range"),
    ("bad escape (end of pattern)", "trailing backslash at end of expression"),
    ("bad escape", "invalid escape sequence"),
)


def _translate(pattern: str) -> str:
    """Rewrite the RE2 constructs whose Python meaning differs."""
    multiline = re.search(r"\(\?[a-zA-Z]*m", pattern) is not None
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "pP":
                raise re.error("Unicode classes (\\p, \\P) are not supported")
            out.append("\\Z" if nxt == "z" and not in_class else ch + nxt)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if posix and posix.group(2) in _POSIX_CLASSES:
                if posix.group(1):
                    raise re.error("negated POSIX classes are not supported")
                out.append(_POSIX_CLASSES[posix.group(2)])
                i += posix.end()
                continue
            if ch == "]" and out and out[-1] not in ("[", "[^"):
                in_class = False
            elif ch == "[":
                ch = "\\["  # a literal inside a class in RE2
            out.append(ch)
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                if pattern[i : i + 1] == "]":
                    out.append("\\]")
                    i += 1
                continue
            out.append("[")
            if pattern[i + 1 : i + 2] == "]":
                out.append("\\]")
                i += 1
        elif ch == "$" and not multiline:
            out.append("\\Z")  # RE2's $ does not match before a final newline
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _go_regexp_error(pattern: str, exc: re.error) -> str:
    message = str(exc.msg)
    for python_text, go_text in _GO_MESSAGES:
        if message.startswith(python_text):
            message = go_text
            break
    return f"error parsing regexp: {message}: `{pattern}`"


@lru_cache(maxsize=256)
def compile_go(pattern: str) -> re.Pattern[str]:
    """Compile an RE2 pattern; FuncError with Go-like text when it is invalid."""
    try:
        return re.compile(_translate(pattern), re.ASCII)
    except re.error as exc:
        raise FuncError(_go_regexp_error(pattern, exc)) from None
    except RecursionError:
        raise FuncError(f"error parsing regexp: expression nests too deeply: `{pattern}`") from None


def must_compile(pattern: str) -> re.Pattern[str]:
    """``regexp.MustCompile``: its panic text becomes the error."""
    try:
        return compile_go(pattern)
    except FuncError as exc:
        quoted = f"`{pattern}`" if "`" not in pattern else repr(pattern)
        raise FuncError(f"regexp: Compile({quoted}): {exc}") from None


def _extract(template: str) -> tuple[str, str] | None:
    """A ``$name`` or ``${name}`` reference at the start of ``template``: (name, rest)."""
    if not template:
        return None
    brace = template[0] == "{"
    i = 1 if brace else 0
    start = i
    while i < len(template) and (template[i] == "_" or template[i].isalnum()):
        i += 1
    if i == start:
        return None
    name = template[start:i]
    if brace:
        if i >= len(template) or template[i] != "}":
            return None
        i += 1
    return name, template[i:]


def _expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.Expand`` for a replacement string."""
    out: list[str] = []
    while template:
        before, sep, after = template.partition("$")
        if not sep:
            break
        out.append(before)
        template = after
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        found = _extract(template)
        if found is None:
            out.append("$")
            continue
        name, template = found
        if name.isdigit() and name.isascii() and not (name[0] == "0" and len(name) > 1):
            num = int(name)
            if num <= (match.re.groups or 0):
                out.append(match.group(num) or "")
        elif name in match.re.groupindex:
            out.append(match.group(name) or "")
    out.append(template)
    return "".join(out)


def replace_all(regex: re.Pattern[str], src: str, repl: str) -> str:
    """``Regexp.ReplaceAllString``: an empty match right after a match is not replaced."""
    out: list[str] = []
    last_end = 0
    search_pos = 0
    while search_pos <= len(src):
        match = regex.search(src, search_pos)
        if match is None:
            break
        start, end = match.span()
        out.append(src[last_end:start])
        if end > last_end or start == 0:
            out.append(_expand(repl, match))
        last_end = end
        search_pos = search_pos + 1 if search_pos + 1 > end else end
    out.append(src[last_end:])
    return "".join(out)


def expand(template: str, match: re.Match[str]) -> str:
    """``Regexp.ExpandString`` of ``template`` for ``match`` (``$1``, ``${name}``, ``$$``)."""
    return _expand(template, match)
