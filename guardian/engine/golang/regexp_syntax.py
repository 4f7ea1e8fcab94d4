"""Go 1.19's ``regexp/syntax`` where RE2 (C++) reads a pattern differently.

Prometheus 2.42 and Alertmanager 0.25 are built with Go 1.19. Its regexp parser and RE2's
are siblings: the same syntax (Perl classes, ``(?flags)``, ``\\pN``, ``\\Q…\\E``, POSIX
classes), the same errors, mostly with the same argument. What differs is handled here:

- what RE2 accepts and Go 1.19 refuses: ``\\C`` (any byte), ``(?<name>…)`` (Go 1.22),
  capture names other than ``[A-Za-z0-9_]+``, Unicode scripts newer than Go 1.19's
  Unicode 13 tables (``\\p{Kawi}``);
- Go's limits on the parse tree: a height of 1000 ("expression nests too deeply") and a
  size of 3.3M instructions ("regexp/syntax: internal error" in Go 1.19's backport), both
  for the whole expression; RE2 has neither. The tree is modelled (literal runs, flattened
  concatenations and alternations, single characters merged into a class), not rebuilt
  exactly: an expression within a few levels of the limit may be judged differently;
- the words of the errors (``missing ]`` is Go's ``missing closing ]``).

:func:`read` also gives the names of the capture groups in order: Go's ``Expand`` takes the
first group of a name that took part in the match, and RE2's binding maps each name to its
first group only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_HEIGHT = 1000
MAX_SIZE = (128 << 20) // 40  # Go's maxSize: 128 MiB of 40-byte instructions

# Scripts of Unicode 14 to 16, which Go 1.19's Unicode 13 tables do not have.
_NEW_SCRIPTS = frozenset(
    (
        *("Cypro_Minoan", "Old_Uyghur", "Tangsa", "Toto", "Vithkuqi"),  # Unicode 14
        *("Kawi", "Nag_Mundari"),  # 15
        *("Garay", "Gurung_Khema", "Kirat_Rai", "Ol_Onal", "Sunuwar", "Todhri", "Tulu_Tigalari"),
    )
)
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")

# RE2's error codes (re2/regexp.cc) in Go's words (regexp/syntax ErrorCode).
_CODES = (
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("invalid escape sequence", "invalid escape sequence"),
    ("missing ]", "missing closing ]"),
    ("missing )", "missing closing )"),
    ("unexpected )", "unexpected )"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid repetition size", "invalid repeat count"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("invalid UTF-8", "invalid UTF-8"),
    ("invalid named capture group", "invalid named capture"),
    ("unexpected error", "regexp/syntax: internal error"),
)
_TRUNCATION = ("missing )", "missing ]")  # what cutting a pattern short can cause
RE2_TOO_LARGE = "pattern too large"


def go_message(code: str, expr: str) -> str:
    """``syntax.Error.Error()``."""
    return f"error parsing regexp: {code}: `{expr}`"


def in_go_words(re2_error: str, pattern: str) -> str | None:
    """RE2's error about ``pattern`` as Go words it; None for RE2's own size limit."""
    for re2_code, go_code in _CODES:
        if re2_error == re2_code or re2_error.startswith(re2_code + ": "):
            expr = re2_error[len(re2_code) + 2 :]
            if re2_code == "invalid named capture group" and not expr.endswith(">"):
                # No closing `>`: Go quotes the rest of the expression.
                start = pattern.rfind(expr)
                expr = pattern[start:] if start >= 0 else expr
            return go_message(go_code, expr)
    if re2_error.startswith(RE2_TOO_LARGE):
        return None
    return f"error parsing regexp: {re2_error}"


@dataclass
class _Node:
    """A node of the parse tree as far as Go's limits see it."""

    # lit: a run of literal runes, whose last one a repetition takes alone; str: literal
    # runes that a group made one node; char: one character; leaf; concat; alt; op
    kind: str
    height: int = 1
    size: int = 1  # for lit and str, the number of runes
    inner: int = 0  # concat and alt: the height of the highest child


@dataclass
class _Frame:
    capture: bool
    branches: list[_Node] = field(default_factory=list)
    items: list[_Node] = field(default_factory=list)


@dataclass(frozen=True)
class Syntax:
    """What :func:`read` finds in a pattern."""

    names: tuple[str, ...]  # one per capture group, in order; "" when unnamed
    go_only: tuple[int, str] | None  # the first construct only Go refuses: (offset, error)
    height: int  # the height of Go's parse tree (modelled)
    size: int  # its size in instructions, as Go estimates it (modelled)


def read(pattern: str) -> Syntax:
    """Scan ``pattern`` as Go's parser would; the errors RE2 also reports are left to it."""
    return _Scanner(pattern).run()


def go_error(
    pattern: str, syntax: Syntax, re2_error: str | None, re2_check: Callable[[str], str | None]
) -> str | None:
    """Go's error for ``pattern`` (None: Go accepts it), from what RE2 said of it
    (``re2_error``) and of a prefix of it (``re2_check``)."""
    if syntax.go_only is not None:
        offset, message = syntax.go_only
        # Go stops at the first error. RE2's came first if the text before ours has it,
        # unless it is one that cutting the text short causes.
        before = re2_check(pattern[:offset]) if re2_error is not None else None
        if before is None or before.startswith(_TRUNCATION) or before.startswith(RE2_TOO_LARGE):
            return message
    if re2_error is not None and not re2_error.startswith(RE2_TOO_LARGE):
        return in_go_words(re2_error, pattern)
    if syntax.height > MAX_HEIGHT:
        return go_message("expression nests too deeply", pattern)
    if syntax.size > MAX_SIZE:
        return go_message("regexp/syntax: internal error", pattern)
    return None


def _concat(items: list[_Node]) -> _Node:
    if not items:
        return _Node("leaf")  # the empty match
    if len(items) == 1:
        return items[0]
    inner = max(i.inner if i.kind == "concat" else i.height for i in items)
    return _Node("concat", inner + 1, sum(i.size for i in items), inner)


def _alternate(branches: list[_Node]) -> _Node:
    merged: list[_Node] = []
    for branch in branches:  # runs of single characters become one class
        single = branch.kind == "char" or (branch.kind in ("lit", "str") and branch.size == 1)
        if single and merged and merged[-1].kind == "char":
            continue
        merged.append(_Node("char") if single else branch)
    if len(merged) == 1:
        return merged[0]
    inner = max(b.inner if b.kind == "alt" else b.height for b in merged)
    return _Node("alt", inner + 1, sum(b.size for b in merged) + len(merged) - 1, inner)


def _repeat_size(sub: int, low: int, high: int) -> int:
    """Go's ``calcSize`` of ``x{low,high}`` (high -1: unbounded) for ``x`` of size ``sub``."""
    if high == -1:
        return 2 + sub if low == 0 else 1 + low * sub
    return max(high * sub + (high - low), 1)


class _Scanner:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.frames = [_Frame(capture=False)]
        self.names: list[str] = []
        self.go_only: tuple[int, str] | None = None
        self.size = 1  # the largest node pushed (a repeat {0} is smaller than its operand)

    def run(self) -> Syntax:
        p = self.p
        while self.i < len(p):
            ch = p[self.i]
            if ch == "\\":
                self.escape()
            elif ch == "[":
                self.char_class()
            elif ch == "(":
                self.open_group()
            elif ch == ")":
                self.close_group()
            elif ch == "|":
                frame = self.frames[-1]
                frame.branches.append(_concat(frame.items))
                frame.items = []
                self.i += 1
            elif ch in "*+?":
                self.i += 1
                low, high = {"*": (0, -1), "+": (1, -1), "?": (0, 1)}[ch]
                self.repeat(low, high)
            elif ch == "{" and self.counted_repeat():
                pass  # it read the repetition
            else:
                self.push(_Node("char" if ch == "." else "leaf" if ch in "^$" else "lit"))
                self.i += 1
        while len(self.frames) > 1:  # unclosed: RE2 reports it
            self.close_group()
        root = self.node(self.frames[0])
        return Syntax(tuple(self.names), self.go_only, root.height, max(self.size, root.size))

    def refuse(self, offset: int, code: str, expr: str) -> None:
        if self.go_only is None:
            self.go_only = (offset, go_message(code, expr))

    def push(self, node: _Node) -> None:
        items = self.frames[-1].items
        if node.kind == "lit" and items and items[-1].kind in ("lit", "str"):
            items[-1] = _Node("lit", 1, items[-1].size + node.size)
        else:
            items.append(node)
        self.size = max(self.size, node.size)

    def node(self, frame: _Frame) -> _Node:
        return _alternate([*frame.branches, _concat(frame.items)])

    def repeat(self, low: int, high: int) -> None:
        if self.p[self.i : self.i + 1] == "?":
            self.i += 1  # non-greedy
        items = self.frames[-1].items
        if not items:
            return  # nothing to repeat: RE2 reports it
        sub = items.pop()
        if sub.kind == "lit" and sub.size > 1:  # the operator takes the last rune only
            items.append(_Node("lit", 1, sub.size - 1))
            sub = _Node("lit")
        self.push(_Node("op", sub.height + 1, _repeat_size(sub.size, low, high)))

    def counted_repeat(self) -> bool:
        """``{n}``, ``{n,}``, ``{n,m}``; False when the brace is a literal."""
        p, j = self.p, self.i + 1
        low_start = j
        while j < len(p) and p[j] in _DIGITS:
            j += 1
        if j == low_start:
            return False
        low = high = int(p[low_start:j])
        if j < len(p) and p[j] == ",":
            j += 1
            high_start = j
            while j < len(p) and p[j] in _DIGITS:
                j += 1
            high = int(p[high_start:j]) if j > high_start else -1
        if j >= len(p) or p[j] != "}":
            return False
        self.i = j + 1
        self.repeat(min(low, 1000), min(high, 1000))  # larger counts: RE2 refuses them
        return True

    def escape(self) -> None:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            self.i = len(p)  # trailing backslash: RE2 reports it
            return
        ch = p[i + 1]
        self.i = i + 2
        if ch == "Q":
            end = p.find("\\E", i + 2)
            text = p[i + 2 : end if end >= 0 else len(p)]
            self.i = end + 2 if end >= 0 else len(p)
            if text:
                self.push(_Node("lit", 1, len(text)))
            return
        if ch == "x" and p[i + 2 : i + 3] == "{" and p.find("}", i) >= 0:
            self.i = p.find("}", i) + 1
        elif ch == "C":
            self.refuse(i, "invalid escape sequence", "\\C")
        elif ch in "pP":
            self.unicode_class(i)
        if ch in "CpPdDsSwW":
            self.push(_Node("char"))
        else:
            self.push(_Node("leaf" if ch in "bBAz" else "lit"))

    def unicode_class(self, start: int) -> None:
        """``\\pN``, ``\\p{Name}``, ``\\P{^Name}`` at ``start``: refuse the scripts Go lacks."""
        p = self.p
        if p[start + 2 : start + 3] != "{":
            self.i = min(start + 3, len(p))
            return
        end = p.find("}", start + 3)
        if end < 0:
            return  # RE2 reports it
        self.i = end + 1
        if p[start + 3 : end].removeprefix("^") in _NEW_SCRIPTS:
            self.refuse(start, "invalid character class range", p[start : end + 1])

    def char_class(self) -> None:
        p = self.p
        i = self.i + 1
        if p[i : i + 1] == "^":
            i += 1
        first = True
        while i < len(p) and (p[i] != "]" or first):
            first = False
            if p.startswith("[:", i) and p.find(":]", i + 2) >= 0:
                i = p.find(":]", i + 2) + 2
            elif p[i] == "\\" and p[i + 1 : i + 2] in ("p", "P"):
                self.unicode_class(i)
                i = max(self.i, i + 2)
            else:
                i += 2 if p[i] == "\\" else 1
        self.i = i + 1
        self.push(_Node("char"))

    def open_group(self) -> None:
        p, i = self.p, self.i
        if not p.startswith("(?", i):
            self.names.append("")
            self.frames.append(_Frame(capture=True))
            self.i = i + 1
            return
        if p.startswith("(?P<", i) and p.find(">", i) >= 0:
            end = p.find(">", i)
            name = p[i + 4 : end]
            if name and not set(name) <= _WORD:
                self.refuse(i, "invalid named capture", p[i : end + 1])
            self.names.append(name)
            self.frames.append(_Frame(capture=True))
            self.i = end + 1
            return
        if p.startswith("(?<", i):
            self.refuse(i, "invalid or unsupported Perl syntax", "(?<")
        j = i + 2
        while j < len(p) and p[j] not in ":)":
            j += 1
        self.i = j + 1
        if j < len(p) and p[j] == ":":
            self.frames.append(_Frame(capture=False))
        # else: flags only, such as (?i); they add no node

    def close_group(self) -> None:
        self.i += 1
        if len(self.frames) == 1:
            return  # unexpected ): RE2 reports it
        frame = self.frames.pop()
        inner = self.node(frame)
        if frame.capture:
            inner = _Node("op", inner.height + 1, inner.size + 2)
        elif inner.kind == "lit":
            inner = _Node("str", 1, inner.size)
        self.push(inner)
