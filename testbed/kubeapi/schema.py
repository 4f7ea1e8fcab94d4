"""Structural schema validation of custom resources, as the apiextensions server does it.

Defaults are applied first (an object default of ``{}`` gets its own fields' defaults),
then types, required fields, enums, patterns, minimums, lengths and counts (maxLength,
maxItems, maxProperties) and the CEL rules the fake knows
(cel.py) are checked; the causes use the real server's words. Unknown fields are
dropped, unless the request asked ``fieldValidation=Strict`` (what kubectl sends): then
they are a 400 ``strict decoding error``, as upstream.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from testbed.kubeapi.cel import compile_rule

Schema = Mapping[str, Any]

FIELD_VALIDATION: ContextVar[str] = ContextVar("field_validation", default="Warn")
"""This request's ``fieldValidation`` (Strict, Warn or Ignore); set by the HTTP layer."""

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return _JSON_TYPES.get(type(value), "object")


def _has_type(value: Any, wanted: str) -> bool:
    actual = _type_name(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


@dataclass
class Findings:
    causes: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def unknown_rules(schema: Schema) -> list[str]:
    """Every CEL rule in ``schema`` that the fake cannot evaluate."""
    found = [
        str(r.get("rule"))
        for r in schema.get("x-kubernetes-validations") or []
        if compile_rule(str(r.get("rule"))) is None
    ]
    for child in (schema.get("properties") or {}).values():
        found += unknown_rules(child)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            found += unknown_rules(schema[key])
    return found


def apply_defaults(schema: Schema, value: Any) -> Any:
    if isinstance(value, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
            if name in value:
                value[name] = apply_defaults(child, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key in list(value):
                if key not in (schema.get("properties") or {}):
                    value[key] = apply_defaults(extra, value[key])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [apply_defaults(schema["items"], item) for item in value]
    return value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _scalar(schema: Schema, value: Any, path: str, out: Findings) -> bool:
    """Type, enum, pattern, minimum. False when the type is wrong (stop there)."""
    wanted = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            out.causes.append(
                (
                    path,
                    (
                        f'Invalid value: "{_type_name(value)}": {path} in body must be of type '
                        "integer,string"
                    ),
                )
            )
            return False
    elif wanted and not _has_type(value, wanted):
        out.causes.append(
            (
                path,
                (
                    f'Invalid value: "{_type_name(value)}": {path} in body must be of type '
                    f'{wanted}: "{_type_name(value)}"'
                ),
            )
        )
        return False
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(f'"{v}"' for v in schema["enum"])
        out.causes.append((path, f'Unsupported value: "{value}": supported values: {supported}'))
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        out.causes.append(
            (path, f"Invalid value: \"{value}\": {path} in body should match '{schema['pattern']}'")
        )
    longest = schema.get("maxLength")
    if longest is not None and isinstance(value, str) and len(value) > longest:
        out.causes.append((path, f"Too long: may not be more than {longest} bytes"))
    minimum = schema.get("minimum")
    if minimum is not None and isinstance(value, (int, float)) and value < minimum:
        out.causes.append(
            (
                path,
                (
                    f"Invalid value: {value}: {path} in body should be greater than or equal to "
                    f"{minimum}"
                ),
            )
        )
    return True


def _count(schema: Schema, value: Any, path: str, out: Findings) -> None:
    """maxItems of a list, maxProperties of a map."""
    most = schema.get("maxItems") if isinstance(value, list) else None
    if isinstance(value, dict):
        most = schema.get("maxProperties")
    if most is not None and len(value) > most:  # field.TooMany says items for both
        out.causes.append((path, f"Too many: {len(value)}: must have at most {most} items"))


def check(schema: Schema, value: Any, path: str, out: Findings) -> Any:
    """``value`` with unknown fields pruned; every problem goes to ``out``."""
    if not _scalar(schema, value, path, out):
        return value
    before = len(out.causes)
    _count(schema, value, path, out)
    if isinstance(value, dict) and not schema.get("x-kubernetes-preserve-unknown-fields"):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        kept: dict[str, Any] = {}
        for name, item in value.items():
            where = _join(path, name)
            if name in props:
                kept[name] = check(props[name], item, where, out)
            elif isinstance(extra, Mapping):
                kept[name] = check(extra, item, where, out)
            elif props or extra is False or (schema.get("type") == "object" and path):
                out.unknown.append(where)
            else:
                kept[name] = item
        for name in schema.get("required") or []:
            if name not in value:
                out.causes.append((_join(path, name), "Required value"))
        value = kept
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        value = [check(schema["items"], v, f"{path}[{i}]", out) for i, v in enumerate(value)]
    if len(out.causes) == before:  # CEL rules run on values that passed the schema
        for rule in schema.get("x-kubernetes-validations") or []:
            mirror = compile_rule(str(rule.get("rule")))
            if mirror is not None and not mirror(value):
                where = path + str(rule.get("fieldPath") or "")
                message = rule.get("message") or f"failed rule: {rule.get('rule')}"
                out.causes.append((where, f'Invalid value: "{_type_name(value)}": {message}'))
    return value
