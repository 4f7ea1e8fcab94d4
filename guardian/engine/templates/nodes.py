"""Parse tree of a template (Go ``text/template/parse`` nodes). ``str(node)`` is Go's ``String``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class Node:
    pos: int


@dataclass
class _Word(Node):
    """A node that always prints the same: a keyword, or ``.`` and ``nil``."""

    word: ClassVar[str]

    def __str__(self) -> str:
        return self.word


@dataclass
class Text(Node):
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class Identifier(Node):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass
class Variable(Node):
    ident: list[str]  # "$x" then field names

    def __str__(self) -> str:
        return ".".join(self.ident)


@dataclass
class Dot(_Word):
    word = "."


@dataclass
class Nil(_Word):
    word = "nil"


@dataclass
class Field(Node):
    ident: list[str]

    def __str__(self) -> str:
        return "".join("." + name for name in self.ident)


@dataclass
class Bool(Node):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass
class Number(Node):
    text: str
    value: int | float | complex  # the ideal constant: int unless the text is float-like

    def __str__(self) -> str:
        return self.text


@dataclass
class String(Node):
    quoted: str
    value: str

    def __str__(self) -> str:
        return self.quoted


@dataclass
class Command(Node):
    args: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, Pipe) else str(a) for a in self.args)


@dataclass
class Pipe(Node):
    is_assign: bool = False
    decl: list[Variable] = field(default_factory=list)
    cmds: list[Command] = field(default_factory=list)

    def __str__(self) -> str:
        text = ""
        if self.decl:
            text = ", ".join(str(v) for v in self.decl) + (" = " if self.is_assign else " := ")
        return text + " | ".join(str(c) for c in self.cmds)


@dataclass
class Chain(Node):
    node: Node
    fields: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        base = f"({self.node})" if isinstance(self.node, Pipe) else str(self.node)
        return base + "".join("." + name for name in self.fields)


@dataclass
class ListNode(Node):
    nodes: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return "".join(str(n) for n in self.nodes)


@dataclass
class Action(Node):
    pipe: Pipe

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


@dataclass
class Branch(Node):
    """``if``, ``range`` and ``with``."""

    keyword: str
    pipe: Pipe
    body: ListNode
    else_body: ListNode | None

    def __str__(self) -> str:
        text = "{{" + self.keyword + " " + str(self.pipe) + "}}" + str(self.body)
        if self.else_body is not None:
            text += "{{else}}" + str(self.else_body)
        return text + "{{end}}"


@dataclass
class Break(_Word):
    word = "{{break}}"


@dataclass
class Continue(_Word):
    word = "{{continue}}"


@dataclass
class TemplateCall(Node):
    name: str
    pipe: Pipe | None

    def __str__(self) -> str:
        from guardian.engine.golang.strconv import go_quote

        if self.pipe is None:
            return "{{template " + go_quote(self.name) + "}}"
        return "{{template " + go_quote(self.name) + " " + str(self.pipe) + "}}"


@dataclass
class End(_Word):
    word = "{{end}}"


@dataclass
class Else(_Word):
    word = "{{else}}"
