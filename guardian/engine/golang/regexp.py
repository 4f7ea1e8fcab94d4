"""Go's ``regexp`` on RE2 (the ``google-re2`` wheel): matching in linear time, as Go's does.

A pattern compiles as Go 1.19's ``regexp.Compile`` reads it: RE2 syntax with Perl classes,
leftmost-first matching, ``.`` not matching ``\\n`` and ``$`` only at the end of the text
unless the pattern sets ``(?s)`` or ``(?m)``. Where RE2 and Go differ,
:mod:`~guardian.engine.golang.regexp_syntax` decides as Go does, and errors read like Go's
(``error parsing regexp: missing closing ): `(```).

Texts are matched as UTF-8. A character with no UTF-8 form (a lone surrogate, or a byte
kept by ``surrogateescape``) is matched as raw bytes, which neither ``.`` nor a class
matches; Go reads such a byte as U+FFFD, which both match. Label values are UTF-8.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from guardian.engine.golang.regexp_syntax import Syntax, go_error, go_message, read
from guardian.engine.golang.strconv import can_backquote, go_quote

# RE2's budget for one program and its DFA caches: 8 MiB by default, too little for
# \pL{1000}, which Go compiles. Go has no such budget; a program over this one (\pL{1000}
# four times) raises RegexpTooLarge.
_MAX_MEM = 64 << 20
_SPECIAL = frozenset("\\.+*?()|[]{}^$")


class RegexpError(ValueError):
    """A pattern Go's ``regexp.Compile`` refuses; ``str()`` is Go's error text."""


class RegexpTooLarge(RegexpError):
    """A pattern Go compiles, but whose program exceeds RE2's memory budget."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _MAX_MEM
    # The defaults are Go's: Perl syntax (posix_syntax off), leftmost-first (longest_match
    # off), UTF-8, case-sensitive, `.` without `\n` (dot_nl off).
    return options


_OPTIONS = _options()


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _rune_width(data: bytes, pos: int) -> int:
    """The bytes of the rune at ``pos`` as ``utf8.DecodeRune`` counts them (0 at the end)."""
    for width in (1, 2, 3, 4):
        try:
            data[pos : pos + width].decode()
        except UnicodeDecodeError:
            continue
        return min(width, len(data) - pos)
    return 1


def _inside_rune(data: bytes, pos: int) -> bool:
    """Whether ``pos`` falls after the first byte of a multi-byte character."""
    return pos < len(data) and data[pos] & 0xC0 == 0x80


def _re2_error(pattern: bytes) -> str | None:
    try:
        re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        return _message(exc)
    return None


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return _text(arg) if isinstance(arg, bytes) else str(arg)


class Match:
    """One match: the byte spans of its groups in the UTF-8 text ((-1, -1): not taken)."""

    __slots__ = ("_data", "_names", "_spans")

    def __init__(self, data: bytes, spans: tuple[tuple[int, int], ...], names: tuple[str, ...]):
        self._data = data
        self._spans = spans
        self._names = names

    def span(self) -> tuple[int, int]:
        return self._spans[0]

    def group(self, index: int = 0) -> str | None:
        """Group ``index`` (0: the whole match); None when it took no part in the match."""
        start, end = self._spans[index]
        return None if start < 0 else _text(self._data[start:end])

    def named(self, name: str) -> str | None:
        """The first group named ``name`` that took part in the match (as ``Expand`` picks)."""
        for index, group_name in enumerate(self._names, start=1):
            if group_name == name and self._spans[index][0] >= 0:
                return self.group(index)
        return None

    @property
    def groups(self) -> int:
        return len(self._spans) - 1


class Regexp:
    """A compiled Go regexp (``*regexp.Regexp``)."""

    __slots__ = ("_names", "_re", "pattern")

    def __init__(self, pattern: str, compiled: Any, syntax: Syntax) -> None:
        self.pattern = pattern
        self._re = compiled
        groups: int = compiled.groups
        names = syntax.names
        if len(names) != groups:  # the scan counts groups as RE2 does; else RE2's own map
            index = {i: name for name, i in compiled.groupindex.items()}
            names = tuple(index.get(i, "") for i in range(1, groups + 1))
        self._names: tuple[str, ...] = names

    def __repr__(self) -> str:
        return f"Regexp({self.pattern!r})"

    def _match(self, data: bytes, found: Any) -> Match | None:
        if found is None:
            return None
        spans = tuple(found.span(i) for i in range(len(self._names) + 1))
        return Match(data, spans, self._names)

    def _find(self, data: bytes, pos: int = 0) -> Match | None:
        """The leftmost match at or after ``pos`` that starts on a rune boundary.

        RE2 tests empty-width assertions between bytes, so ``\\B`` also matches inside a
        multi-byte character, where Go, which steps by runes, never looks."""
        while True:
            found = self._re.search(data, pos)
            if found is None:
                return None
            start: int = found.span()[0]
            if not _inside_rune(data, start):
                return self._match(data, found)
            pos = start + 1
            while _inside_rune(data, pos):
                pos += 1

    def search(self, text: str) -> Match | None:
        """The leftmost match in ``text`` (``FindStringSubmatchIndex``)."""
        return self._find(_utf8(text))

    def fullmatch(self, text: str) -> Match | None:
        """A match of the whole of ``text``, as ``^(?:pattern)$`` would give."""
        data = _utf8(text)
        return self._match(data, self._re.fullmatch(data))

    def match_string(self, text: str) -> bool:
        """``MatchString``: whether ``text`` contains a match."""
        return self._find(_utf8(text)) is not None

    def expand_string(self, template: str, match: Match) -> str:
        """``ExpandString``: ``$1``, ``${1}``, ``$name``, ``${name}`` and ``$$`` in ``template``."""
        return _expand(template, match)

    def replace_all_string(self, src: str, repl: str) -> str:
        """``ReplaceAllString``: each match replaced by ``repl`` expanded; an empty match
        right after a match is not replaced."""
        data = _utf8(src)
        out: list[str] = []
        last_end = search_pos = 0
        while search_pos <= len(data):
            match = self._find(data, search_pos)
            if match is None:
                break
            start, end = match.span()
            out.append(_text(data[last_end:start]))
            if end > last_end or start == 0:
                out.append(_expand(repl, match))
            last_end = end
            width = _rune_width(data, search_pos)  # advance at least one rune
            if search_pos + width > end:
                search_pos += width
            elif search_pos + 1 > end:
                search_pos += 1
            else:
                search_pos = end
        out.append(_text(data[last_end:]))
        return "".join(out)


def _extract(template: str) -> tuple[str, str] | None:
    """A ``name`` or ``{name}`` reference at the start of ``template``: (name, rest)."""
    brace = template[:1] == "{"
    i = start = 1 if brace else 0
    while i < len(template) and (
        template[i] == "_" or template[i].isalpha() or template[i].isdecimal()
    ):
        i += 1  # unicode.IsLetter, unicode.IsDigit
    if i == start:
        return None
    name = template[start:i]
    if brace:
        if template[i : i + 1] != "}":
            return None
        i += 1
    return name, template[i:]


def _expand(template: str, match: Match) -> str:
    """Go's ``Regexp.expand``."""
    out: list[str] = []
    while True:
        before, dollar, template = template.partition("$")
        out.append(before)
        if not dollar:
            return "".join(out)
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        found = _extract(template)
        if found is None:
            out.append("$")  # malformed: the $ stays
            continue
        name, template = found
        if name.isascii() and name.isdigit() and (name == "0" or name[0] != "0"):
            if int(name) <= match.groups:
                out.append(match.group(int(name)) or "")
        else:
            out.append(match.named(name) or "")


@lru_cache(maxsize=256)
def compile_regexp(pattern: str) -> Regexp:
    """``regexp.Compile``; :class:`RegexpError` with Go's text when Go refuses the pattern."""
    return _compile(pattern)


def check_syntax(pattern: str) -> None:
    """:class:`RegexpError` when Go refuses ``pattern`` (not kept in this module's cache)."""
    _compile(pattern)


def _compile(pattern: str) -> Regexp:
    try:
        data = pattern.encode()
    except UnicodeEncodeError as exc:  # not UTF-8 (a byte kept by surrogateescape)
        raise RegexpError(go_message("invalid UTF-8", pattern[exc.start :])) from None
    syntax = read(pattern)
    compiled, re2_error = None, None
    try:
        compiled = re2.compile(data, _OPTIONS)
    except re2.error as exc:
        re2_error = _message(exc)
    message = go_error(pattern, syntax, re2_error, lambda prefix: _re2_error(prefix.encode()))
    if message is not None:
        raise RegexpError(message)
    if compiled is None:
        raise RegexpTooLarge(go_message("expression too large for RE2's memory budget", pattern))
    return Regexp(pattern, compiled, syntax)


def must_compile(pattern: str) -> Regexp:
    """``regexp.MustCompile``: its panic text is the error."""
    try:
        return compile_regexp(pattern)
    except RegexpError as exc:
        quoted = f"`{pattern}`" if can_backquote(pattern) else go_quote(pattern)
        raise RegexpError(f"regexp: Compile({quoted}): {exc}") from None


def quote_meta(text: str) -> str:
    """``regexp.QuoteMeta``: ``text`` escaped to match itself literally."""
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)
