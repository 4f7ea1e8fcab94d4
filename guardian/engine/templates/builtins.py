"""The predefined functions of Go's ``text/template`` (``funcs.go``)."""

from __future__ import annotations

from guardian.engine.golang.fmt import sprint, sprintf, sprintln
from guardian.engine.golang.reflect import basic_kind, type_name
from guardian.engine.templates.errors import FuncError
from guardian.engine.templates.signature import Func
from guardian.engine.templates.values import (
    MISSING,
    ArgsMap,
    is_true,
)

_BAD_TYPE = "invalid type for comparison"
_INCOMPATIBLE = "incompatible types for comparison"


def _indirect_interface(value: object) -> object:
    # A nil interface{} becomes Go's invalid value.
    return MISSING if value is None else value


def _comparable(value: object) -> bool:
    return not isinstance(value, dict | list) and value is not MISSING


def eq(arg1: object, *args: object) -> bool:
    a1 = _indirect_interface(arg1)
    if a1 is not MISSING and not _comparable(a1):
        raise FuncError(f"non-comparable type {sprint(a1)}: {type_name(a1)}")
    if not args:
        raise FuncError("missing argument for comparison")
    k1 = basic_kind(a1)
    for arg in args:
        a = _indirect_interface(arg)
        k2 = basic_kind(a)
        if k1 != k2:
            if a1 is not MISSING and a is not MISSING:
                raise FuncError(_INCOMPATIBLE)
            truth = False
        elif k1 is not None:
            truth = a1 == a
        else:
            if a is not MISSING and not _comparable(a):
                raise FuncError(f"non-comparable type {sprint(a)}: {type_name(a)}")
            truth = a1 is a
        if truth:
            return True
    return False


def ne(arg1: object, arg2: object) -> bool:
    return not eq(arg1, arg2)


def lt(arg1: object, arg2: object) -> bool:
    a1, a2 = _indirect_interface(arg1), _indirect_interface(arg2)
    k1, k2 = basic_kind(a1), basic_kind(a2)
    if k1 is None or k2 is None:
        raise FuncError(_BAD_TYPE)
    if k1 != k2:
        raise FuncError(_INCOMPATIBLE)
    if k1 in ("bool", "complex"):
        raise FuncError(_BAD_TYPE)
    return bool(a1 < a2)  # type: ignore[operator]


def le(arg1: object, arg2: object) -> bool:
    return lt(arg1, arg2) or eq(arg1, arg2)


def gt(arg1: object, arg2: object) -> bool:
    return not le(arg1, arg2)


def ge(arg1: object, arg2: object) -> bool:
    return not lt(arg1, arg2)


def and_(arg0: object, *args: object) -> object:  # short-circuits in the executor
    raise AssertionError("and is evaluated by the executor")


def not_(arg: object) -> bool:
    return not is_true(arg)


def length(item: object) -> int:
    if item is None:
        raise FuncError("len of nil pointer")
    if item is MISSING:
        raise FuncError("reflect: call of reflect.Value.Type on zero Value")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, dict | list):
        return len(item)
    name = type_name(item).lstrip("*")
    raise FuncError(f"len of type {name}")


def _index_one(item: object, index: object) -> object:
    index = _indirect_interface(index)
    if isinstance(item, str | list):
        seq: bytes | list[object] = item.encode() if isinstance(item, str) else list(item)
        if index is MISSING:
            raise FuncError("cannot index slice/array with nil")
        if not isinstance(index, int) or isinstance(index, bool):
            raise FuncError(f"cannot index slice/array with type {type_name(index)}")
        if index < 0 or index > len(seq):
            raise FuncError(f"index out of range: {index}")
        if index == len(seq):
            kind = "string" if isinstance(item, str) else "slice"
            raise FuncError(f"reflect: {kind} index out of range")
        return seq[index]
    if isinstance(item, dict):
        if index is MISSING:
            raise FuncError("value is nil; should be of type string")
        if type(index) is not str:
            raise FuncError(f"value has type {type_name(index)}; should be string")
        return item.get(index, None if isinstance(item, ArgsMap) else "")
    name = type_name(item).lstrip("*")
    raise FuncError(f"can't index item of type {name}")


def index(item: object, *indexes: object) -> object:
    item = _indirect_interface(item)
    if item is MISSING:
        raise FuncError("index of untyped nil")
    for idx in indexes:
        item = _index_one(item, idx)
    return item


def _eval_args(args: tuple[object, ...]) -> str:
    if len(args) == 1 and type(args[0]) is str:
        return args[0]
    return sprint(*args)


def html_escape(*args: object) -> str:
    text = _eval_args(args)
    table = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&#39;", '"': "&#34;", "\0": "\ufffd"}
    return "".join(table.get(ch, ch) for ch in text)


def js_escape(*args: object) -> str:
    text = _eval_args(args)
    table = {
        "\\": "\\\\",
        "'": "\\'",
        '"': '\\"',
        "<": "\\u003C",
        ">": "\\u003E",
        "&": "\\u0026",
        "=": "\\u003D",
    }
    out = []
    for ch in text:
        if ch in table:
            out.append(table[ch])
        elif ord(ch) < 0x20 or (ord(ch) >= 0x80 and not ch.isprintable()):
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def query_escape(text: str) -> str:
    """``url.QueryEscape``."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch.isascii() and (ch.isalnum() or ch in "-_.~"):
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def urlquery(*args: object) -> str:
    return query_escape(_eval_args(args))


BUILTINS: dict[str, Func] = {
    "and": Func(and_, ("value",), "value"),
    "or": Func(and_, ("value",), "value"),
    "not": Func(not_, ("value",)),
    "len": Func(length, ("value",)),
    "index": Func(index, ("value",), "value"),
    "print": Func(sprint, (), "any"),
    "println": Func(sprintln, (), "any"),
    "printf": Func(sprintf, ("string",), "any"),
    "html": Func(html_escape, (), "any"),
    "js": Func(js_escape, (), "any"),
    "urlquery": Func(urlquery, (), "any"),
    "eq": Func(eq, ("value",), "value"),
    "ne": Func(ne, ("value", "value")),
    "lt": Func(lt, ("value", "value")),
    "le": Func(le, ("value", "value")),
    "gt": Func(gt, ("value", "value")),
    "ge": Func(ge, ("value", "value")),
}
