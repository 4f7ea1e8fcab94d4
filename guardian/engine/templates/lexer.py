"""Tokens of Go's ``text/template`` (the lexer of ``text/template/parse``, default delimiters)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from guardian.engine.golang.strconv import go_quote

LEFT_DELIM = "{{"
RIGHT_DELIM = "}}"
_SPACE = " \t\r\n"
_State: TypeAlias = "Callable[[], _State | None]"


class Tok(enum.Enum):
    ERROR = "error"
    EOF = "EOF"
    TEXT = "text"
    LEFT_DELIM = "{{"
    RIGHT_DELIM = "}}"
    SPACE = "space"
    BOOL = "bool"
    CHAR = "char"
    CHAR_CONSTANT = "char constant"
    NUMBER = "number"
    STRING = "string"
    RAW_STRING = "raw string"
    FIELD = "field"
    IDENTIFIER = "identifier"
    VARIABLE = "variable"
    ASSIGN = "="
    DECLARE = ":="
    PIPE = "|"
    LEFT_PAREN = "("
    RIGHT_PAREN = ")"
    DOT = "."
    NIL = "nil"
    # Keywords.
    BLOCK = "block"
    BREAK = "break"
    CONTINUE = "continue"
    DEFINE = "define"
    ELSE = "else"
    END = "end"
    IF = "if"
    RANGE = "range"
    TEMPLATE = "template"
    WITH = "with"


# The keywords are the members from BLOCK to WITH, each spelled as its value; "nil" is
# looked up as a word too, but is an operand, not a keyword.
_MEMBERS = list(Tok)
_KEYWORD_TYPES = frozenset(_MEMBERS[_MEMBERS.index(Tok.BLOCK) : _MEMBERS.index(Tok.WITH) + 1])
KEYWORDS = {t.value: t for t in (*_KEYWORD_TYPES, Tok.NIL)}


@dataclass(frozen=True)
class Token:
    typ: Tok
    val: str
    pos: int  # character offset in the template text
    line: int

    def __str__(self) -> str:
        """Go's ``item.String``, used in parse error messages."""
        if self.typ is Tok.EOF:
            return "EOF"
        if self.typ is Tok.ERROR:
            return self.val
        if self.typ in _KEYWORD_TYPES:
            return f"<{self.val}>"
        if len(self.val) > 10:
            return go_quote(self.val[:10]) + "..."
        return go_quote(self.val)


def _is_alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdigit()


def go_rune(ch: str) -> str:
    """``%#U`` of a rune: ``U+0021 '!'``."""
    code = ord(ch)
    return f"U+{code:04X} '{ch}'" if ch.isprintable() else f"U+{code:04X}"


class Lexer:
    """Scans the whole text into tokens; a lexical error ends the list with an ERROR token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.start = 0
        self.line = 1
        self.start_line = 1
        self.paren_depth = 0
        self.tokens: list[Token] = []

    # -- helpers -------------------------------------------------------------
    def _peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def _advance(self, n: int = 1) -> None:
        self.line += self.text.count("\n", self.pos, self.pos + n)
        self.pos += n

    def _emit(self, typ: Tok) -> None:
        self.tokens.append(
            Token(typ, self.text[self.start : self.pos], self.start, self.start_line)
        )
        self._ignore()

    def _ignore(self) -> None:
        self.start = self.pos
        self.start_line = self.line

    def _error(self, message: str) -> None:
        self.tokens.append(Token(Tok.ERROR, message, self.start, self.start_line))

    def _at_right_delim(self) -> tuple[bool, bool]:
        rest = self.text[self.pos :]
        if len(rest) >= 2 and rest[1] == "-" and rest[0] in _SPACE and rest[2:4] == RIGHT_DELIM:
            return True, True
        return rest.startswith(RIGHT_DELIM), False

    def _at_terminator(self) -> bool:
        ch = self._peek()
        return ch == "" or ch in _SPACE or ch in ".,|:)(" or ch == RIGHT_DELIM[0]

    # -- states --------------------------------------------------------------
    def run(self) -> list[Token]:
        state: _State | None = self._lex_text
        while state is not None:
            state = state()
        return self.tokens

    def _lex_text(self) -> _State | None:
        idx = self.text.find(LEFT_DELIM, self.pos)
        if idx < 0:
            self._advance(len(self.text) - self.pos)
            if self.pos > self.start:
                self._emit(Tok.TEXT)
            self.tokens.append(Token(Tok.EOF, "", self.pos, self.line))
            return None
        end = idx
        after = self.text[idx + 2 : idx + 4]
        if len(after) == 2 and after[0] == "-" and after[1] in _SPACE:
            end = len(self.text[self.start : idx].rstrip(_SPACE)) + self.start
        self._advance(idx - self.pos)
        if end > self.start:
            self.tokens.append(
                Token(Tok.TEXT, self.text[self.start : end], self.start, self.start_line)
            )
        self._ignore()
        return self._lex_left_delim

    def _lex_left_delim(self) -> _State | None:
        self._advance(len(LEFT_DELIM))
        rest = self.text[self.pos :]
        trim = len(rest) >= 2 and rest[0] == "-" and rest[1] in _SPACE
        after = 2 if trim else 0
        if self.text.startswith("/*", self.pos + after):
            self._advance(after)
            self._ignore()
            return self._lex_comment
        self._emit(Tok.LEFT_DELIM)
        self._advance(after)
        self._ignore()
        self.paren_depth = 0
        return self._lex_inside_action

    def _lex_comment(self) -> _State | None:
        self._advance(2)
        idx = self.text.find("*/", self.pos)
        if idx < 0:
            self._error("unclosed comment")
            return None
        self._advance(idx + 2 - self.pos)
        delim, trim = self._at_right_delim()
        if not delim:
            self._error("comment ends before closing delimiter")
            return None
        self._advance((2 if trim else 0) + len(RIGHT_DELIM))
        if trim:
            self._skip_left_trim()
        self._ignore()
        return self._lex_text

    def _skip_left_trim(self) -> None:
        rest = self.text[self.pos :]
        self._advance(len(rest) - len(rest.lstrip(_SPACE)))

    def _lex_right_delim(self) -> _State | None:
        _, trim = self._at_right_delim()
        if trim:
            self._advance(2)
            self._ignore()
        self._advance(len(RIGHT_DELIM))
        self._emit(Tok.RIGHT_DELIM)
        if trim:
            self._skip_left_trim()
            self._ignore()
        return self._lex_text

    def _lex_inside_action(self) -> _State | None:
        delim, _ = self._at_right_delim()
        if delim:
            if self.paren_depth == 0:
                return self._lex_right_delim
            self._error("unclosed left paren")
            return None
        ch = self._peek()
        if ch == "":
            self._error("unclosed action")
            return None
        if ch in _SPACE:
            return self._lex_space
        self._advance()
        if ch == "=":
            self._emit(Tok.ASSIGN)
        elif ch == ":":
            if self._peek() != "=":
                self._error("expected :=")
                return None
            self._advance()
            self._emit(Tok.DECLARE)
        elif ch == "|":
            self._emit(Tok.PIPE)
        elif ch == '"':
            return self._lex_quote('"', Tok.STRING, "unterminated quoted string")
        elif ch == "'":
            return self._lex_quote("'", Tok.CHAR_CONSTANT, "unterminated character constant")
        elif ch == "`":
            return self._lex_raw_quote()
        elif ch == "$":
            return self._lex_field_or_variable(Tok.VARIABLE)
        elif ch == "." and not ("0" <= self._peek() <= "9" and self._peek() != ""):
            return self._lex_field_or_variable(Tok.FIELD)
        elif ch in "+-." or "0" <= ch <= "9":
            self.pos -= 1
            return self._lex_number
        elif _is_alnum(ch):
            self.pos -= 1
            return self._lex_identifier
        elif ch == "(":
            self._emit(Tok.LEFT_PAREN)
            self.paren_depth += 1
        elif ch == ")":
            self._emit(Tok.RIGHT_PAREN)
            self.paren_depth -= 1
            if self.paren_depth < 0:
                self._error(f"unexpected right paren {go_rune(ch)}")
                return None
        elif ord(ch) < 0x80 and ch.isprintable():
            self._emit(Tok.CHAR)
        else:
            self._error(f"unrecognized character in action: {go_rune(ch)}")
            return None
        return self._lex_inside_action

    def _lex_raw_quote(self) -> _State | None:
        idx = self.text.find("`", self.pos)
        if idx < 0:
            self._error("unterminated raw quoted string")
            return None
        self._advance(idx + 1 - self.pos)
        self._emit(Tok.RAW_STRING)
        return self._lex_inside_action

    def _lex_space(self) -> _State | None:
        count = 0
        while self._peek() != "" and self._peek() in _SPACE:
            self._advance()
            count += 1
        # A space that starts " -}}" belongs to the closing delimiter.
        rest = self.text[self.pos - 1 :]
        if rest[1:2] == "-" and rest[2:4] == RIGHT_DELIM:
            self.pos -= 1
            if count == 1:
                return self._lex_right_delim
        self._emit(Tok.SPACE)
        return self._lex_inside_action

    def _lex_quote(self, quote: str, typ: Tok, message: str) -> _State | None:
        while True:
            ch = self._peek()
            if ch == "\\":
                self._advance()
                ch = self._peek()
                if ch not in ("", "\n"):
                    self._advance()
                    continue
            if ch in ("", "\n"):
                self._error(message)
                return None
            self._advance()
            if ch == quote:
                break
        self._emit(typ)
        return self._lex_inside_action

    def _lex_field_or_variable(self, typ: Tok) -> _State | None:
        if self._at_terminator():
            self._emit(Tok.VARIABLE if typ is Tok.VARIABLE else Tok.DOT)
            return self._lex_inside_action
        while self._peek() != "" and _is_alnum(self._peek()):
            self._advance()
        if not self._at_terminator():
            self._error(f"bad character {go_rune(self._peek())}")
            return None
        self._emit(typ)
        return self._lex_inside_action

    def _lex_identifier(self) -> _State | None:
        while self._peek() != "" and _is_alnum(self._peek()):
            self._advance()
        if not self._at_terminator():
            self._error(f"bad character {go_rune(self._peek())}")
            return None
        word = self.text[self.start : self.pos]
        if word in KEYWORDS:
            self._emit(KEYWORDS[word])
        elif word in ("true", "false"):
            self._emit(Tok.BOOL)
        else:
            self._emit(Tok.IDENTIFIER)
        return self._lex_inside_action

    def _accept(self, chars: str) -> bool:
        if self._peek() != "" and self._peek() in chars:
            self._advance()
            return True
        return False

    def _accept_run(self, chars: str) -> None:
        while self._accept(chars):
            pass

    def _lex_number(self) -> _State | None:
        if not self._scan_number():
            self._error(f"bad number syntax: {go_quote(self.text[self.start : self.pos])}")
            return None
        # A complex constant such as 1+2i: no spaces, and it must end in i.
        if self._peek() in ("+", "-") and (
            not self._scan_number() or self.text[self.pos - 1] != "i"
        ):
            self._error(f"bad number syntax: {go_quote(self.text[self.start : self.pos])}")
            return None
        self._emit(Tok.NUMBER)
        return self._lex_inside_action

    def _scan_number(self) -> bool:
        self._accept("+-")
        digits = "0123456789_"
        if self._accept("0"):
            if self._accept("xX"):
                digits = "0123456789abcdefABCDEF_"
            elif self._accept("oO"):
                digits = "01234567_"
            elif self._accept("bB"):
                digits = "01_"
        self._accept_run(digits)
        if self._accept("."):
            self._accept_run(digits)
        if len(digits) == 11 and self._accept("eE"):
            self._accept("+-")
            self._accept_run("0123456789_")
        if len(digits) == 23 and self._accept("pP"):
            self._accept("+-")
            self._accept_run("0123456789_")
        self._accept("i")
        if self._peek() != "" and _is_alnum(self._peek()):
            self._advance()
            return False
        return True


def lex(text: str) -> list[Token]:
    """All tokens of ``text``; the last is EOF or ERROR."""
    return Lexer(text).run()
