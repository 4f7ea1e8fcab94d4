"""A small validator for the OpenAPI v3 subset that CRD schemas use.

Enough for the PrometheusRule CRD: type, properties, required, additionalProperties,
items, pattern (Go RE2 syntax, as the API server reads it), minLength, anyOf
(``x-kubernetes-int-or-string``) and ``x-kubernetes-list-type: map`` key uniqueness.
Fields the schema does not know are reported too: the API server would silently prune
them, which for a manifest generator is a bug.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CRD_PATH = Path(__file__).with_name("crd_prometheusrules.yaml")


def prometheusrule_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD_PATH.read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    # RE2 allows a flag group after ^; Python wants global flags first.
    flags = re.match(r"^\^\(\?([a-z]+)\)", pattern)
    if flags:
        pattern = f"(?{flags.group(1)})^" + pattern[flags.end() :]
    return re.compile(pattern)


def _type_ok(value: Any, kind: str) -> bool:
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    return bool(checks[kind](value))


def validate(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Every violation of ``schema`` by ``value``, as ``path: message``."""
    where = path or "<root>"
    options = schema.get("anyOf")
    if options is not None and all(validate(value, option, path) for option in options):
        return [f"{where}: matches none of {options}"]
    kind = schema.get("type")
    if kind is not None and not _type_ok(value, kind):
        return [f"{where}: expected {kind}, got {type(value).__name__} {value!r}"]
    errors: list[str] = []
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and not _regex(schema["pattern"]).search(value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        missing = [r for r in schema.get("required", ()) if r not in value]
        errors += [f"{where}: missing required field {r}" for r in missing]
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if properties is not None and key in properties:
                errors += validate(item, properties[key], f"{path}.{key}" if path else key)
            elif isinstance(extra, dict):
                errors += validate(item, extra, f"{path}.{key}" if path else key)
            elif properties is not None:
                errors.append(f"{where}: unknown field {key!r} (the API server would prune it)")
    if isinstance(value, list):
        for index, item in enumerate(value):
            errors += validate(item, schema.get("items", {}), f"{path}[{index}]")
        if schema.get("x-kubernetes-list-type") == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen: set[tuple[Any, ...]] = set()
            for item in value:
                key = tuple(item.get(k) for k in keys) if isinstance(item, dict) else (item,)
                if key in seen:
                    keyed = dict(zip(keys, key, strict=True))
                    errors.append(f"{where}: duplicate entries with {keyed}")
                seen.add(key)
    return errors
