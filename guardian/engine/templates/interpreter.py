"""Executes a parsed template the way Go's ``text/template`` ``exec.go`` does.

Errors carry Go's text, including the location and node of the failing step
(``template: NAME:LINE:COL: executing "NAME" at <NODE>: …``), so that the strings Prometheus
writes into annotations come out the same.
"""

from __future__ import annotations

from guardian.engine.golang.fmt import sprint
from guardian.engine.golang.reflect import type_name
from guardian.engine.golang.strconv import go_quote
from guardian.engine.golang.time import Time
from guardian.engine.templates import nodes as n
from guardian.engine.templates.errors import BreakLoop, ContinueLoop, ExecError, FuncError
from guardian.engine.templates.signature import GO_KIND_NAMES, Func
from guardian.engine.templates.timemethods import time_method
from guardian.engine.templates.values import (
    MISSING,
    ArgsMap,
    QueryResult,
    QuerySample,
    TemplateData,
    is_true,
    print_value,
)

_NO_FINAL = object()  # Go's missingVal: no value piped in from the previous command
_NO_FIELD = object()  # the receiver has no such field or method
_MAX_DEPTH = 100


class State:
    def __init__(
        self, name: str, text: str, funcs: dict[str, Func], defs: dict[str, n.ListNode]
    ) -> None:
        self.name = name
        self.text = text
        self.funcs = funcs
        self.defs = defs
        self.node: n.Node | None = None
        self.vars: list[tuple[str, object]] = []
        self.out: list[str] = []
        self.depth = 0

    # -- errors ----------------------------------------------------------------
    def at(self, node: n.Node) -> None:
        self.node = node

    def errorf(self, message: str) -> ExecError:
        if self.node is None:
            return ExecError(f"template: {self.name}: {message}")
        pos = self.node.pos
        before = self.text[:pos]
        newline = before.rfind("\n")
        column = len(before.encode()) if newline < 0 else len(before[newline + 1 :].encode())
        line = 1 + before.count("\n")
        return ExecError(
            f"template: {self.name}:{line}:{column}: executing {go_quote(self.name)} "
            f"at <{self.node}>: {message}"
        )

    # -- variables -------------------------------------------------------------
    def var_value(self, name: str) -> object:
        for var_name, value in reversed(self.vars):
            if var_name == name:
                return value
        raise self.errorf(f"undefined variable: {name}")

    def set_var(self, name: str, value: object) -> None:
        for i in range(len(self.vars) - 1, -1, -1):
            if self.vars[i][0] == name:
                self.vars[i] = (name, value)
                return
        raise self.errorf(f"undefined variable: {name}")

    # -- statements ------------------------------------------------------------
    def walk(self, dot: object, node: n.Node) -> None:
        self.at(node)
        if isinstance(node, n.Action):
            value = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.at(node)
                self.out.append(print_value(value))
        elif isinstance(node, n.Text):
            self.out.append(node.text)
        elif isinstance(node, n.ListNode):
            for child in node.nodes:
                self.walk(dot, child)
        elif isinstance(node, n.Branch):
            if node.keyword == "range":
                self.walk_range(dot, node)
            else:
                self.walk_if_or_with(dot, node)
        elif isinstance(node, n.TemplateCall):
            self.walk_template(dot, node)
        elif isinstance(node, n.Break):
            raise BreakLoop
        elif isinstance(node, n.Continue):
            raise ContinueLoop
        else:  # pragma: no cover - the parser produces no other statements
            raise self.errorf(f"unknown node: {node}")

    def walk_if_or_with(self, dot: object, node: n.Branch) -> None:
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            if is_true(value):
                self.walk(value if node.keyword == "with" else dot, node.body)
            elif node.else_body is not None:
                self.walk(dot, node.else_body)
        finally:
            del self.vars[mark:]

    def walk_range(self, dot: object, node: n.Branch) -> None:
        self.at(node)
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            inner = len(self.vars)
            items: list[tuple[object, object]]
            if isinstance(value, list):
                items = list(enumerate(value))
            elif isinstance(value, dict):
                items = [(key, value[key]) for key in sorted(value)]
            elif value is MISSING or value is None:
                items = []
            else:
                raise self.errorf(f"range can't iterate over {sprint(value)}")
            if items:
                for index, elem in items:
                    if node.pipe.decl:
                        self.vars[-1] = (self.vars[-1][0], elem)
                    if len(node.pipe.decl) > 1:
                        self.vars[-2] = (self.vars[-2][0], index)
                    try:
                        self.walk(elem, node.body)
                    except ContinueLoop:
                        pass
                    except BreakLoop:
                        break
                    finally:
                        del self.vars[inner:]
                return
            if node.else_body is not None:
                self.walk(dot, node.else_body)
        finally:
            del self.vars[mark:]

    def walk_template(self, dot: object, node: n.TemplateCall) -> None:
        self.at(node)
        body = self.defs.get(node.name)
        if body is None:
            raise self.errorf(f"template {go_quote(node.name)} not defined")
        if self.depth >= _MAX_DEPTH:
            raise self.errorf(f"exceeded maximum template depth ({_MAX_DEPTH})")
        new_dot = MISSING if node.pipe is None else self.eval_pipeline(dot, node.pipe)
        saved_vars, saved_depth = self.vars, self.depth
        self.vars, self.depth = [("$", new_dot)], self.depth + 1
        try:
            self.walk(new_dot, body)
        finally:
            self.vars, self.depth = saved_vars, saved_depth

    # -- expressions -----------------------------------------------------------
    def eval_pipeline(self, dot: object, pipe: n.Pipe) -> object:
        self.at(pipe)
        value: object = _NO_FINAL
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
            if value is None:  # a nil interface{} result is Go's invalid value
                value = MISSING
        for var in pipe.decl:
            if pipe.is_assign:
                self.set_var(var.ident[0], value)
            else:
                self.vars.append((var.ident[0], value))
        return value

    def not_a_function(self, args: list[n.Node], final: object) -> None:
        if len(args) > 1 or final is not _NO_FINAL:
            raise self.errorf(f"can't give argument to non-function {args[0]}")

    def eval_command(self, dot: object, cmd: n.Command, final: object) -> object:
        first = cmd.args[0]
        if isinstance(first, n.Field):
            return self.eval_field_node(dot, first, cmd.args, final)
        if isinstance(first, n.Chain):
            return self.eval_chain_node(dot, first, cmd.args, final)
        if isinstance(first, n.Identifier):
            return self.eval_function(dot, first, cmd, cmd.args, final)
        if isinstance(first, n.Pipe):
            self.not_a_function(cmd.args, final)
            return self.eval_pipeline(dot, first)
        if isinstance(first, n.Variable):
            return self.eval_variable_node(dot, first, cmd.args, final)
        self.at(first)
        self.not_a_function(cmd.args, final)
        if isinstance(first, n.Bool):
            return first.value
        if isinstance(first, n.Dot):
            return dot
        if isinstance(first, n.Nil):
            raise self.errorf("nil is not a command")
        if isinstance(first, n.Number):
            return first.value
        if isinstance(first, n.String):
            return first.value
        raise self.errorf(f"can't evaluate command {go_quote(str(first))}")

    def eval_field_node(
        self, dot: object, field: n.Field, args: list[n.Node] | None, final: object
    ) -> object:
        self.at(field)
        return self.eval_field_chain(dot, dot, field, field.ident, args, final)

    def eval_chain_node(
        self, dot: object, chain: n.Chain, args: list[n.Node] | None, final: object
    ) -> object:
        self.at(chain)
        if isinstance(chain.node, n.Nil):
            raise self.errorf(f"indirection through explicit nil in {chain}")
        receiver = self.eval_arg(dot, None, chain.node)
        return self.eval_field_chain(dot, receiver, chain, chain.fields, args, final)

    def eval_variable_node(
        self, dot: object, var: n.Variable, args: list[n.Node] | None, final: object
    ) -> object:
        self.at(var)
        value = self.var_value(var.ident[0])
        if len(var.ident) == 1:
            self.not_a_function(args or [var], final)
            return value
        return self.eval_field_chain(dot, value, var, var.ident[1:], args, final)

    def eval_field_chain(
        self,
        dot: object,
        receiver: object,
        node: n.Node,
        names: list[str],
        args: list[n.Node] | None,
        final: object,
    ) -> object:
        from_iface = False  # an element of map[string]interface {} has static type interface {}
        for i, name in enumerate(names):
            last = i == len(names) - 1
            value = self.eval_field(
                dot, node, name, args if last else None, final if last else _NO_FINAL, receiver
            )
            if value is _NO_FIELD:
                kind = "interface {}" if from_iface else type_name(receiver)
                raise self.errorf(f"can't evaluate field {name} in type {kind}")
            from_iface = isinstance(receiver, ArgsMap)
            receiver = value
        return receiver

    def eval_field(
        self,
        dot: object,
        node: n.Node,
        name: str,
        args: list[n.Node] | None,
        final: object,
        receiver: object,
    ) -> object:
        """The field (or method) ``name`` of ``receiver``; ``_NO_FIELD`` if it has none
        (the caller words the error: it knows the receiver's static type)."""
        if receiver is MISSING:
            return MISSING
        has_args = (args is not None and len(args) > 1) or final is not _NO_FINAL
        if receiver is None:
            raise self.errorf(f"nil pointer evaluating interface {{}}.{name}")
        if isinstance(receiver, Time):
            method = time_method(receiver, name)
            if method is not None:
                return self.eval_call(dot, method, node, name, args, final)
        if isinstance(receiver, TemplateData | QuerySample):
            fields: dict[str, object]
            if isinstance(receiver, TemplateData):
                fields = {
                    "Labels": dict(receiver.labels),
                    "ExternalLabels": dict(receiver.external_labels),
                    "ExternalURL": receiver.external_url,
                    "Value": receiver.value,
                }
            else:
                fields = {"Labels": dict(receiver.labels), "Value": receiver.value}
            if name in fields:
                if has_args:
                    raise self.errorf(f"{name} has arguments but cannot be invoked as function")
                return fields[name]
        elif isinstance(receiver, dict):
            if has_args:
                raise self.errorf(f"{name} is not a method but has arguments")
            return receiver.get(name, None if isinstance(receiver, ArgsMap) else "")
        return _NO_FIELD

    def eval_function(
        self,
        dot: object,
        node: n.Identifier,
        cmd: n.Node,
        args: list[n.Node] | None,
        final: object,
    ) -> object:
        self.at(node)
        func = self.funcs.get(node.name)
        if func is None:
            raise self.errorf(f"{go_quote(node.name)} is not a defined function")
        return self.eval_call(dot, func, cmd, node.name, args, final)

    def eval_call(
        self,
        dot: object,
        func: Func,
        node: n.Node,
        name: str,
        args: list[n.Node] | None,
        final: object,
    ) -> object:
        call_args = args[1:] if args is not None else []
        num_in = len(call_args) + (final is not _NO_FINAL)
        num_fixed = len(func.params)
        if func.variadic is not None:
            if num_in < num_fixed:
                raise self.errorf(
                    f"wrong number of args for {name}: want at least {num_fixed} "
                    f"got {len(call_args)}"
                )
        elif num_in != num_fixed:
            raise self.errorf(f"wrong number of args for {name}: want {num_fixed} got {num_in}")
        if name in ("and", "or"):
            value: object = MISSING
            for arg in call_args:
                value = self.eval_arg(dot, "value", arg)
                if is_true(value) == (name == "or"):
                    return value
            if final is not _NO_FINAL:
                value = self.validate(final, "value")
            return value
        argv = [
            self.eval_arg(dot, func.params[i] if i < num_fixed else func.variadic, arg)
            for i, arg in enumerate(call_args)
        ]
        if final is not _NO_FINAL:
            kind = func.params[num_in - 1] if num_in - 1 < num_fixed else func.variadic
            argv.append(self.validate(final, kind))
        try:
            return func.fn(*argv)
        except FuncError as exc:
            self.at(node)
            raise self.errorf(f"error calling {name}: {exc}") from None

    def eval_arg(self, dot: object, kind: str | None, node: n.Node) -> object:
        self.at(node)
        if isinstance(node, n.Dot):
            return self.validate(dot, kind)
        if isinstance(node, n.Nil):
            if kind == "string":
                raise self.errorf("cannot assign nil to string")
            return MISSING if kind in ("value", None) else None
        if isinstance(node, n.Field):
            return self.validate(self.eval_field_node(dot, node, [node], _NO_FINAL), kind)
        if isinstance(node, n.Variable):
            return self.validate(self.eval_variable_node(dot, node, None, _NO_FINAL), kind)
        if isinstance(node, n.Pipe):
            return self.validate(self.eval_pipeline(dot, node), kind)
        if isinstance(node, n.Identifier):
            return self.validate(self.eval_function(dot, node, node, None, _NO_FINAL), kind)
        if isinstance(node, n.Chain):
            return self.validate(self.eval_chain_node(dot, node, None, _NO_FINAL), kind)
        if kind == "string":
            if isinstance(node, n.String):
                return node.value
            raise self.errorf(f"expected string; found {node}")
        if kind in ("any", "value") and isinstance(node, n.Bool | n.Number | n.String):
            return node.value
        raise self.errorf(f"can't handle {node} for arg of type {GO_KIND_NAMES.get(kind or '')}")

    def validate(self, value: object, kind: str | None) -> object:
        if kind is None or kind == "value":
            return value
        if value is MISSING:
            if kind == "string":
                raise self.errorf("invalid value; expected string")
            return QueryResult() if kind == "vector" else None
        ok = {
            "string": type(value) is str,
            "any": True,
            "sample": isinstance(value, QuerySample),
            "vector": isinstance(value, QueryResult),
        }[kind]
        if not ok:
            got = "interface {}" if value is None else type_name(value)
            raise self.errorf(f"wrong type for value; expected {GO_KIND_NAMES[kind]}; got {got}")
        return value
