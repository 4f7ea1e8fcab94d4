"""Label and field selectors, parsed from their query-string forms as the API server does."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from testbed.kubeapi.errors import bad_request

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[A-Za-z0-9]?(?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_SET_RE = re.compile(rf"\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*")
_EQ_RE = re.compile(rf"\s*({_KEY})\s*(==|!=|=)\s*({_VALUE})\s*")
_EXISTS_RE = re.compile(rf"\s*(!?)\s*({_KEY})\s*")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        # "!=" and "notin" match objects without the label too.
        return not present or value not in self.values


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """Parse e.g. ``app=web,tier!=db,env in (a,b),!legacy``; a bad selector is a 400."""
    requirements: list[Requirement] = []
    if not text.strip():
        return requirements
    for part in _split_top_level(text):
        if match := _SET_RE.fullmatch(part):
            values = frozenset(v.strip() for v in match.group(3).split(",") if v.strip())
            requirements.append(Requirement(match.group(1), match.group(2), values))
        elif match := _EQ_RE.fullmatch(part):
            op = "!=" if match.group(2) == "!=" else "="
            requirements.append(Requirement(match.group(1), op, frozenset({match.group(3)})))
        elif match := _EXISTS_RE.fullmatch(part):
            op = "!" if match.group(1) else "exists"
            requirements.append(Requirement(match.group(2), op))
        else:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
    return requirements


def labels_match(requirements: list[Requirement], obj: Mapping[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(req.matches(labels) for req in requirements)


def selector_to_string(selector: Mapping[str, Any] | None) -> str:
    """Render a ``LabelSelector`` object (matchLabels / matchExpressions) as a selector string."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    value: str
    negate: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual = field_value(obj, self.path)
        return (actual != self.value) if self.negate else (actual == self.value)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of the value at dotted ``path``; missing values read as ``""``."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return ""
        node = node[part]
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _unescape(text: str) -> str:
    """Drop the backslash before each escaped character."""
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str) -> list[FieldRequirement]:
    """Parse e.g. ``spec.nodeName=n1,status.phase!=Succeeded`` (``\\`` escapes ``,=!``)."""
    requirements: list[FieldRequirement] = []
    if not text.strip():
        return requirements
    for raw in _split_unescaped_commas(text):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|!=|=)(.*)", raw, re.DOTALL)
        if match is None:
            raise bad_request(f"invalid field selector: {text!r}")
        value = _unescape(match.group(3))
        requirements.append(FieldRequirement(match.group(1), value, match.group(2) == "!="))
    return requirements


def _split_unescaped_commas(text: str) -> list[str]:
    """Split on unescaped commas, keeping escapes for the value parser."""
    out: list[str] = []
    start, index = 0, 0
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == ",":
            out.append(text[start:index])
            start = index + 1
        index += 1
    out.append(text[start:])
    return out


def fields_match(requirements: list[FieldRequirement], obj: Mapping[str, Any]) -> bool:
    return all(req.matches(obj) for req in requirements)


def compile_filter(
    label_selector: str | None, field_selector: str | None
) -> Callable[[Mapping[str, Any]], bool]:
    """One predicate for both selectors; a bad selector raises a 400 ``ApiError``."""
    labels = parse_label_selector(label_selector or "")
    fields = parse_field_selector(field_selector or "")

    def accept(obj: Mapping[str, Any]) -> bool:
        return labels_match(labels, obj) and fields_match(fields, obj)

    return accept
