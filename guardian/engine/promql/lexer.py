"""PromQL tokens, lexed as Prometheus 2.42's ``promql/parser/lex.go`` does.

The lexer is modal like Go's: inside ``{…}`` every word is a label name, after ``[`` a
duration is expected, and keywords are recognised case-insensitively everywhere else.
A lexing error ends the token stream with one ``ERROR`` token carrying the message.
"""

from __future__ import annotations

from guardian.engine.golang.strconv import go_quote
from guardian.engine.promql.tokens import (
    AGGREGATORS,
    KEYWORDS,
    OPERATORS,
    T,
    Token,
    is_alnum,
    is_alpha,
)

_WORDS = {
    t.value: t
    for t in (*OPERATORS, *AGGREGATORS, *KEYWORDS, T.START, T.END)
    if t.value.isidentifier()
}
_NUMBER_WORDS = frozenset({"inf", "nan"})
_SPACE = " \t\n\r"
_DIGITS = "0123456789"
_HEX_DIGITS = "0123456789abcdefABCDEF"
_SIMPLE = {
    ",": T.COMMA,
    "*": T.MUL,
    "/": T.DIV,
    "%": T.MOD,
    "+": T.ADD,
    "-": T.SUB,
    "^": T.POW,
    "@": T.AT,
}


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.start = 0
        self.tokens: list[Token] = []
        self.paren_depth = 0
        self.brace_open = False
        self.bracket_open = False
        self.got_colon = False

    # -- scanning helpers
    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def next(self) -> str:
        ch = self.peek()
        if ch:
            self.pos += 1
        return ch

    def accept(self, valid: str) -> bool:
        ch = self.peek()
        if ch and ch in valid:
            self.pos += 1
            return True
        return False

    def accept_run(self, valid: str) -> None:
        while self.accept(valid):
            pass

    def emit(self, typ: T) -> None:
        self.tokens.append(Token(typ, self.start, self.text[self.start : self.pos]))
        self.start = self.pos

    def fail(self, message: str) -> bool:
        self.tokens.append(Token(T.ERROR, self.start, message))
        return False

    # -- states; each returns False once an error or EOF ends the stream
    def run(self) -> list[Token]:
        while self.step():
            pass
        return self.tokens

    def step(self) -> bool:
        self.start = self.pos
        if self.peek() == "#":
            while self.peek() and self.peek() not in "\r\n":
                self.pos += 1
            return True
        if self.brace_open:
            return self.inside_braces()
        return self.statement()

    def statement(self) -> bool:
        ch = self.next()
        if not ch:
            return self.end_of_input()
        if ch in _SIMPLE:
            self.emit(_SIMPLE[ch])
        elif ch in _SPACE:
            self.accept_run(_SPACE)
        elif ch in "=!<>":
            return self.comparison(ch)
        elif ch in _DIGITS or (ch == "." and self.peek() in tuple(_DIGITS)):
            self.pos -= 1
            return self.number_or_duration()
        elif ch in "\"'`":
            return self.string(ch)
        elif is_alpha(ch) or ch == ":":
            return self.word_or_colon(ch)
        elif ch in "(){[]":  # a "}" outside braces is unexpected
            return self.bracket(ch)
        else:
            return self.fail(f"unexpected character: {_quote_rune(ch)}")
        return True

    def end_of_input(self) -> bool:
        if self.paren_depth:
            return self.fail("unclosed left parenthesis")
        if self.bracket_open:
            return self.fail("unclosed left bracket")
        self.emit(T.EOF)
        return False

    def comparison(self, ch: str) -> bool:
        """``=``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` (``=~`` only inside braces)."""
        if ch == "=":
            if self.accept("="):
                self.emit(T.EQLC)
            elif self.peek() == "~":
                return self.fail("unexpected character after '=': '~'")
            else:
                self.emit(T.EQL)
        elif ch == "!":
            if not self.accept("="):
                return self.fail(f"unexpected character after '!': {_quote_rune(self.peek())}")
            self.emit(T.NEQ)
        else:
            wide = self.accept("=")
            if ch == "<":
                self.emit(T.LTE if wide else T.LSS)
            else:
                self.emit(T.GTE if wide else T.GTR)
        return True

    def word_or_colon(self, ch: str) -> bool:
        """A keyword or identifier; inside ``[…]`` the colon of a subquery."""
        if not self.bracket_open:
            self.pos -= 1
            self.keyword_or_identifier()
        elif self.got_colon:
            return self.fail(f"unexpected colon {_quote_rune(ch)}")
        else:
            self.emit(T.COLON)
            self.got_colon = True
        return True

    def bracket(self, ch: str) -> bool:
        if ch == "(":
            self.emit(T.LEFT_PAREN)
            self.paren_depth += 1
        elif ch == ")":
            self.emit(T.RIGHT_PAREN)
            self.paren_depth -= 1
            if self.paren_depth < 0:
                return self.fail("unexpected right parenthesis ')'")
        elif ch == "{":
            self.emit(T.LEFT_BRACE)
            self.brace_open = True
        elif ch == "[":
            if self.bracket_open:
                return self.fail("unexpected left bracket '['")
            self.got_colon = False
            self.emit(T.LEFT_BRACKET)
            self.accept_run(_SPACE)
            self.start = self.pos
            self.bracket_open = True
            return self.duration()
        else:  # "]"
            if not self.bracket_open:
                return self.fail("unexpected right bracket ']'")
            self.emit(T.RIGHT_BRACKET)
            self.bracket_open = False
        return True

    def inside_braces(self) -> bool:
        ch = self.next()
        if not ch:
            return self.fail("unexpected end of input inside braces")
        if ch in _SPACE:
            self.accept_run(_SPACE)
        elif is_alpha(ch):
            while is_alnum(self.peek()):
                self.pos += 1
            self.emit(T.IDENTIFIER)
        elif ch == ",":
            self.emit(T.COMMA)
        elif ch in "\"'`":
            return self.string(ch)
        elif ch == "=":
            self.emit(T.EQL_REGEX if self.accept("~") else T.EQL)
        elif ch == "!":
            if self.accept("~"):
                self.emit(T.NEQ_REGEX)
            elif self.accept("="):
                self.emit(T.NEQ)
            else:
                nxt = _quote_rune(self.peek())
                return self.fail(f"unexpected character after '!' inside braces: {nxt}")
        elif ch == "{":
            return self.fail("unexpected left brace '{'")
        elif ch == "}":
            self.emit(T.RIGHT_BRACE)
            self.brace_open = False
        else:
            return self.fail(f"unexpected character inside braces: {_quote_rune(ch)}")
        return True

    def string(self, quote: str) -> bool:
        while True:
            ch = self.next()
            if quote != "`" and ch == "\\":
                error = self.escape(quote)
                if error:
                    return self.fail(error)
                continue
            if not ch or (ch == "\n" and quote != "`"):
                return self.fail(
                    "unterminated raw string" if quote == "`" else "unterminated quoted string"
                )
            if ch == quote:
                self.emit(T.STRING)
                return True

    def escape(self, quote: str) -> str | None:
        ch = self.next()
        if ch and ch in "abfnrtv\\" + quote:
            return None
        widths = {"x": (2, 16, 255), "u": (4, 16, 0x10FFFF), "U": (8, 16, 0x10FFFF)}
        if ch and ch in "01234567":
            count, base, limit = 3, 8, 255
            self.pos -= 1
        elif ch in widths:
            count, base, limit = widths[ch]
        elif not ch:
            return "escape sequence not terminated"
        else:
            return f"unknown escape sequence {_go_unicode(ch)}"
        value = 0
        for _ in range(count):
            digit = self.next()
            if not digit:
                return "escape sequence not terminated"
            if digit not in (_HEX_DIGITS if base == 16 else "01234567"):
                return f"illegal character {_go_unicode(digit)} in escape sequence"
            value = value * base + int(digit, 16)
        if value > limit or 0xD800 <= value < 0xE000:
            return "escape sequence is an invalid Unicode code point"
        return None

    def scan_number(self) -> bool:
        digits = _DIGITS
        if self.accept("0") and self.accept("xX"):
            digits = _HEX_DIGITS
        self.accept_run(digits)
        if self.accept("."):
            self.accept_run(digits)
        if self.accept("eE"):
            self.accept("+-")
            self.accept_run(_DIGITS)
        return not is_alnum(self.peek())

    def remaining_duration(self) -> bool:
        if not self.accept("smhdwy"):
            return False
        self.accept("s")
        while self.accept(_DIGITS):
            self.accept_run(_DIGITS)
            if not self.accept("smhdw"):
                return False
            self.accept("s")
        return not is_alnum(self.peek())

    def number_or_duration(self) -> bool:
        if self.scan_number():
            self.emit(T.NUMBER)
            return True
        if self.remaining_duration():
            self.emit(T.DURATION)
            return True
        self.pos += 1 if self.peek() else 0
        return self.fail(
            f"bad number or duration syntax: {go_quote(self.text[self.start : self.pos])}"
        )

    def duration(self) -> bool:
        if self.scan_number():
            return self.fail("missing unit character in duration")
        if not self.remaining_duration():
            self.pos += 1 if self.peek() else 0
            return self.fail(f"bad duration syntax: {go_quote(self.text[self.start : self.pos])}")
        self.emit(T.DURATION)
        return True

    def keyword_or_identifier(self) -> None:
        while is_alnum(self.peek()) or self.peek() == ":":
            self.pos += 1
        word = self.text[self.start : self.pos]
        lowered = word.lower()
        if lowered in _WORDS:
            self.emit(_WORDS[lowered])
        elif lowered in _NUMBER_WORDS:
            self.emit(T.NUMBER)
        elif ":" in word:
            self.emit(T.METRIC_IDENTIFIER)
        else:
            self.emit(T.IDENTIFIER)


def _quote_rune(ch: str) -> str:
    if not ch:
        return "'\\uffff'"  # Go's eof rune (-1) as %q prints it
    return "'\\''" if ch == "'" else f"'{ch}'"


def _go_unicode(ch: str) -> str:
    return f"U+{ord(ch):04X} '{ch}'"


def lex(text: str) -> list[Token]:
    """All tokens of ``text``, ending with ``EOF`` or one ``ERROR``."""
    return _Lexer(text).run()
