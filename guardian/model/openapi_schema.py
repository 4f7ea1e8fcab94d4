"""Building blocks of the structural OpenAPI v3 schemas our CRDs carry (the API server
validates objects with them): strings, durations, booleans, enums, objects with their
CEL rules, bounded string lists."""

from __future__ import annotations

from typing import Any

from guardian.model import policy_limits as limit

Schema = dict[str, Any]

_UNITS = ("y", "w", "d", "h", "m", "s", "ms")
DURATION_PATTERN = (
    "^([0-9]+|"
    + "|".join(
        f"[0-9]+{unit}" + "".join(f"([0-9]+{later})?" for later in _UNITS[i + 1 :])
        for i, unit in enumerate(_UNITS)
    )
    + ")$"
)
"""Seconds, or a Prometheus duration with its units largest first (never empty)."""


def string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def duration(default: str, description: str) -> Schema:
    return {
        "x-kubernetes-int-or-string": True,
        "pattern": DURATION_PATTERN,
        "maxLength": limit.MAX_DURATION_TEXT,
        "default": default,
        "description": description + " A Prometheus duration (90s, 30m, 1h30m) or seconds.",
    }


def boolean(default: bool, description: str) -> Schema:
    return {"type": "boolean", "default": default, "description": description}


def enum(values: tuple[str, ...], default: str, description: str) -> Schema:
    return {"type": "string", "enum": list(values), "default": default, "description": description}


def obj(properties: dict[str, Schema], description: str = "", **extra: Any) -> Schema:
    """An object schema; ``rules``: its x-kubernetes-validations."""
    rules = extra.pop("rules", None)
    out: Schema = {"type": "object", "properties": properties, **extra}
    if rules:
        out["x-kubernetes-validations"] = rules
    if description:
        out["description"] = description
    return out


def strings(
    description: str, max_items: int, max_length: int, pattern: str | None = None
) -> Schema:
    item = string(maxLength=max_length)
    if pattern is not None:
        item["pattern"] = pattern
    return {
        "type": "array",
        "maxItems": max_items,
        "items": item,
        "description": description,
    }
