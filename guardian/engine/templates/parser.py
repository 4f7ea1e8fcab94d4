"""Parser of Go's ``text/template`` language (mirrors ``text/template/parse``)."""

from __future__ import annotations

from collections.abc import Collection

from guardian.engine.golang.strconv import go_quote, unquote
from guardian.engine.templates import nodes as n
from guardian.engine.templates.constants import char_constant, number_constant
from guardian.engine.templates.errors import TemplateParseError
from guardian.engine.templates.lexer import Tok, Token, lex

_OPERAND_START = frozenset(
    {
        Tok.BOOL,
        Tok.CHAR_CONSTANT,
        Tok.DOT,
        Tok.FIELD,
        Tok.IDENTIFIER,
        Tok.NUMBER,
        Tok.NIL,
        Tok.RAW_STRING,
        Tok.STRING,
        Tok.VARIABLE,
        Tok.LEFT_PAREN,
    }
)


class Parser:
    def __init__(self, text: str, name: str, functions: Collection[str], offset: int) -> None:
        self.text = text
        self.name = name
        self.functions = functions
        self.offset = offset  # length of a prepended preamble, hidden from reported columns
        self.tokens = lex(text)
        self.index = 0
        self.vars = ["$"]
        self.range_depth = 0
        self.action_line = 0
        self.definitions: dict[str, n.ListNode] = {}
        self.current = self.tokens[0]

    # -- token stream ---------------------------------------------------------
    def next(self) -> Token:
        tok = self.tokens[min(self.index, len(self.tokens) - 1)]
        self.index += 1
        self.current = tok
        return tok

    def backup(self, count: int = 1) -> None:
        self.index -= count

    def peek(self) -> Token:
        return self.tokens[min(self.index, len(self.tokens) - 1)]

    def next_non_space(self) -> Token:
        tok = self.next()
        while tok.typ is Tok.SPACE:
            tok = self.next()
        return tok

    def peek_non_space(self) -> Token:
        tok = self.next_non_space()
        self.backup()
        return tok

    # -- errors ----------------------------------------------------------------
    def error(self, reason: str) -> TemplateParseError:
        tok = self.current
        pos = tok.pos
        line_start = self.text.rfind("\n", 0, pos) + 1
        column = len(self.text[line_start:pos].encode()) + 1
        if tok.line == 1:
            column = max(1, column - self.offset)
        return TemplateParseError(self.name, tok.line, column, reason)

    def unexpected(self, tok: Token, context: str) -> TemplateParseError:
        if tok.typ is Tok.ERROR:
            extra = ""
            if self.action_line and self.action_line != tok.line:
                extra = f" in action started at {self.name}:{self.action_line}"
                if tok.val.endswith(" action"):
                    extra = extra[len(" in action") :]
            return self.error(f"{tok}{extra}")
        return self.error(f"unexpected {tok} in {context}")

    def expect(self, typ: Tok, context: str) -> Token:
        tok = self.next_non_space()
        if tok.typ is not typ:
            raise self.unexpected(tok, context)
        return tok

    # -- grammar -------------------------------------------------------------
    def parse(self) -> n.ListNode:
        root = n.ListNode(self.peek().pos)
        while self.peek().typ is not Tok.EOF:
            if self.peek().typ is Tok.LEFT_DELIM:
                self.next()
                if self.next_non_space().typ is Tok.DEFINE:
                    self.parse_definition()
                    continue
                self.index = self._rewind_to_delim()
            node = self.text_or_action()
            if isinstance(node, n.End | n.Else):
                raise self.error(f"unexpected {node}")
            root.nodes.append(node)
        return root

    def _rewind_to_delim(self) -> int:
        i = self.index - 1
        while self.tokens[i].typ is not Tok.LEFT_DELIM:
            i -= 1
        return i

    def parse_definition(self) -> None:
        context = "define clause"
        tok = self.next_non_space()
        name = self.template_name(tok, context)
        self.expect(Tok.RIGHT_DELIM, context)
        body = self.definition_body(context)
        if name in self.definitions and self.definitions[name].nodes and body.nodes:
            raise self.error(f"template: multiple definition of template {_q(name)}")
        self.definitions[name] = body

    def template_name(self, tok: Token, context: str) -> str:
        """The quoted name a define, template or block clause names."""
        if tok.typ not in (Tok.STRING, Tok.RAW_STRING):
            raise self.unexpected(tok, context)
        return self._unquote(tok)

    def definition_body(self, context: str) -> n.ListNode:
        """A define or block body up to its end, with only ``$`` in scope."""
        saved_vars = self.vars
        self.vars = ["$"]
        body, end = self.item_list()
        self.vars = saved_vars
        if not isinstance(end, n.End):
            raise self.error(f"unexpected {end} in {context}")
        return body

    def item_list(self) -> tuple[n.ListNode, n.Node]:
        body = n.ListNode(self.peek_non_space().pos)
        while self.peek_non_space().typ is not Tok.EOF:
            node = self.text_or_action()
            if isinstance(node, n.End | n.Else):
                return body, node
            body.nodes.append(node)
        raise self.error("unexpected EOF")

    def text_or_action(self) -> n.Node:
        tok = self.next_non_space()
        if tok.typ is Tok.TEXT:
            return n.Text(tok.pos, tok.val)
        if tok.typ is Tok.LEFT_DELIM:
            self.action_line = tok.line
            try:
                return self.action()
            finally:
                self.action_line = 0
        raise self.unexpected(tok, "input")

    def action(self) -> n.Node:
        tok = self.next_non_space()
        if tok.typ is Tok.BREAK or tok.typ is Tok.CONTINUE:
            return self.loop_control(tok)
        if tok.typ is Tok.ELSE:
            return self.else_control()
        if tok.typ is Tok.END:
            return n.End(self.expect(Tok.RIGHT_DELIM, "end").pos)
        if tok.typ is Tok.IF:
            return self.branch("if", allow_else_if=True)
        if tok.typ is Tok.RANGE:
            return self.branch("range")
        if tok.typ is Tok.WITH:
            return self.branch("with")
        if tok.typ is Tok.TEMPLATE or tok.typ is Tok.BLOCK:
            return self.template_control(tok)
        self.backup()
        return n.Action(self.peek().pos, self.pipeline("command", Tok.RIGHT_DELIM))

    def loop_control(self, tok: Token) -> n.Node:
        word = tok.val
        nxt = self.next_non_space()
        if nxt.typ is not Tok.RIGHT_DELIM:
            raise self.unexpected(nxt, f"{{{{{word}}}}}")
        if self.range_depth == 0:
            raise self.error(f"{{{{{word}}}}} outside {{{{range}}}}")
        return n.Break(tok.pos) if word == "break" else n.Continue(tok.pos)

    def else_control(self) -> n.Node:
        peek = self.peek_non_space()
        if peek.typ is Tok.IF:
            return n.Else(peek.pos)
        return n.Else(self.expect(Tok.RIGHT_DELIM, "else").pos)

    def branch(self, keyword: str, allow_else_if: bool = False) -> n.Branch:
        mark = len(self.vars)
        try:
            pipe = self.pipeline(keyword, Tok.RIGHT_DELIM)
            if keyword == "range":
                self.range_depth += 1
            body, nxt = self.item_list()
            if keyword == "range":
                self.range_depth -= 1
            else_body = None
            if isinstance(nxt, n.Else):
                if allow_else_if and self.peek().typ is Tok.IF:
                    self.next()
                    else_body = n.ListNode(nxt.pos, [self.branch("if", allow_else_if=True)])
                else:
                    else_body, nxt = self.item_list()
                    if not isinstance(nxt, n.End):
                        raise self.error(f"expected end; found {nxt}")
            return n.Branch(pipe.pos, keyword, pipe, body, else_body)
        finally:
            del self.vars[mark:]

    def template_control(self, tok: Token) -> n.Node:
        context = "template clause" if tok.typ is Tok.TEMPLATE else "block clause"
        name_tok = self.next_non_space()
        name = self.template_name(name_tok, context)
        pipe = None
        if self.next_non_space().typ is not Tok.RIGHT_DELIM:
            self.backup()
            pipe = self.pipeline(context, Tok.RIGHT_DELIM)
        if tok.typ is Tok.BLOCK:
            self.definitions[name] = self.definition_body(context)
        return n.TemplateCall(name_tok.pos, name, pipe)

    def pipeline(self, context: str, end: Tok) -> n.Pipe:
        pipe = n.Pipe(self.peek_non_space().pos)
        while True:  # declarations
            var = self.peek_non_space()
            if var.typ is not Tok.VARIABLE:
                break
            var_index = self.index
            self.next_non_space()
            nxt = self.peek_non_space()
            if nxt.typ in (Tok.ASSIGN, Tok.DECLARE):
                pipe.is_assign = nxt.typ is Tok.ASSIGN
                self.next_non_space()
                pipe.decl.append(n.Variable(var.pos, [var.val]))
                self.vars.append(var.val)
                break
            if nxt.typ is Tok.CHAR and nxt.val == ",":
                self.next_non_space()
                pipe.decl.append(n.Variable(var.pos, [var.val]))
                self.vars.append(var.val)
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space().typ in (
                        Tok.VARIABLE,
                        Tok.RIGHT_DELIM,
                        Tok.RIGHT_PAREN,
                    ):
                        continue
                    raise self.error("range can only initialize variables")
                raise self.error(f"too many declarations in {context}")
            # Not a declaration: put the variable (and the space after it) back.
            self.index = var_index
            break
        while True:
            tok = self.next_non_space()
            if tok.typ is end:
                self.check_pipeline(pipe, context)
                return pipe
            if tok.typ in _OPERAND_START:
                self.backup()
                pipe.cmds.append(self.command())
            else:
                raise self.unexpected(tok, context)

    def check_pipeline(self, pipe: n.Pipe, context: str) -> None:
        if not pipe.cmds:
            raise self.error(f"missing value for {context}")
        for i, cmd in enumerate(pipe.cmds[1:]):
            if isinstance(cmd.args[0], n.Bool | n.Dot | n.Nil | n.Number | n.String):
                raise self.error(f"non executable command in pipeline stage {i + 2}")

    def command(self) -> n.Command:
        cmd = n.Command(self.peek_non_space().pos)
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            tok = self.next()
            if tok.typ is Tok.SPACE:
                continue
            if tok.typ in (Tok.RIGHT_DELIM, Tok.RIGHT_PAREN):
                self.backup()
            elif tok.typ is not Tok.PIPE:
                raise self.unexpected(tok, "operand")
            break
        if not cmd.args:
            raise self.error("empty command")
        return cmd

    def operand(self) -> n.Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek().typ is Tok.FIELD:
            pos = self.peek().pos
            fields: list[str] = []
            while self.peek().typ is Tok.FIELD:
                fields.append(self.next().val[1:])
            if isinstance(node, n.Field):
                return n.Field(pos, [*node.ident, *fields])
            if isinstance(node, n.Variable):
                return n.Variable(pos, [*node.ident, *fields])
            if isinstance(node, n.Bool | n.String | n.Number | n.Nil | n.Dot):
                raise self.error(f"unexpected . after term {_q(str(node))}")
            return n.Chain(pos, node, fields)
        return node

    def term(self) -> n.Node | None:
        tok = self.next_non_space()
        typ = tok.typ
        if typ is Tok.IDENTIFIER:
            if tok.val not in self.functions:
                raise self.error(f"function {_q(tok.val)} not defined")
            return n.Identifier(tok.pos, tok.val)
        if typ is Tok.DOT:
            return n.Dot(tok.pos)
        if typ is Tok.NIL:
            return n.Nil(tok.pos)
        if typ is Tok.VARIABLE:
            name = tok.val.split(".")[0]
            if name not in self.vars:
                raise self.error(f"undefined variable {_q(name)}")
            return n.Variable(tok.pos, [tok.val])
        if typ is Tok.FIELD:
            return n.Field(tok.pos, [tok.val[1:]])
        if typ is Tok.BOOL:
            return n.Bool(tok.pos, tok.val == "true")
        if typ is Tok.NUMBER or typ is Tok.CHAR_CONSTANT:
            return self.number(tok)
        if typ is Tok.LEFT_PAREN:
            return self.pipeline("parenthesized pipeline", Tok.RIGHT_PAREN)
        if typ is Tok.STRING or typ is Tok.RAW_STRING:
            return n.String(tok.pos, tok.val, self._unquote(tok))
        self.backup()
        return None

    def number(self, tok: Token) -> n.Number:
        try:
            if tok.typ is Tok.CHAR_CONSTANT:
                return n.Number(tok.pos, tok.val, char_constant(tok.val))
            return n.Number(tok.pos, tok.val, number_constant(tok.val))
        except ValueError as exc:
            raise self.error(str(exc)) from None

    def _unquote(self, tok: Token) -> str:
        try:
            return unquote(tok.val)
        except ValueError as exc:
            raise self.error(str(exc)) from None


def _q(text: str) -> str:
    return go_quote(text)


def parse(
    text: str, name: str, functions: Collection[str], offset: int = 0
) -> tuple[n.ListNode, dict[str, n.ListNode]]:
    """Parse ``text``; returns the root list and the ``define``d templates."""
    parser = Parser(text, name, functions, offset)
    root = parser.parse()
    return root, parser.definitions
