"""The ``meta.k8s.io/v1 Table`` kubectl asks for (``Accept: ...;as=Table;...``).

A custom resource gets its CRD's ``additionalPrinterColumns`` after ``Name``, rendered
as the apiextensions server does: strings as printed, integers as numbers, ``date``
columns as ages (``5m``); a path that finds nothing is an empty cell. Other kinds get
``Name`` and ``Age``. JSONPath: dotted fields, ``[n]`` and ``[?(@.field=="value")]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from testbed.kubeapi.resources import ResourceType

_STEP = re.compile(
    r'\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_.-]+)==["\']([^"\']*)["\']\)\]'
)
_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def wants_table(accept: str | None) -> bool:
    return bool(accept) and "as=Table" in str(accept)


def find(obj: Any, path: str) -> Any:
    """The first value ``path`` selects in ``obj``, or None."""
    nodes = [obj]
    for field, index, key, value in _STEP.findall(path):
        found = []
        for node in nodes:
            if field and isinstance(node, Mapping) and field in node:
                found.append(node[field])
            elif index and isinstance(node, list) and int(index) < len(node):
                found.append(node[int(index)])
            elif key and isinstance(node, list):
                found += [i for i in node if isinstance(i, Mapping) and str(i.get(key)) == value]
        nodes = found
    return nodes[0] if nodes else None


def human_age(seconds: float) -> str:
    """Kubernetes' HumanDuration (what ``kubectl get`` shows as AGE)."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    return f"{hours // 24}d" if hours < 24 * 365 * 2 else f"{hours // (24 * 365)}y"


def _cell(column: Mapping[str, Any], obj: Mapping[str, Any], now: datetime) -> Any:
    value = find(obj, str(column.get("jsonPath", "")))
    if value is None:
        return None
    kind = column.get("type")
    if kind == "date":
        try:
            then = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return "<invalid>"
        return human_age((now - then).total_seconds())
    if kind == "integer":
        return value if isinstance(value, int) else None
    if kind == "string":
        return value if isinstance(value, str) else str(value)
    return value


def table(rtype: ResourceType, items: list[dict[str, Any]], rv: int, now: datetime) -> Any:
    columns = list(rtype.crd.columns) if rtype.crd is not None else [_AGE]
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
    ] + [
        {
            "name": c["name"],
            "type": c.get("type", "string"),
            "format": c.get("format", ""),
            "description": c.get("description", ""),
            "priority": c.get("priority", 0),
        }
        for c in columns
    ]
    rows = [
        {
            "cells": [item["metadata"]["name"], *(_cell(c, item, now) for c in columns)],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item["metadata"],
            },
        }
        for item in items
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": definitions,
        "rows": rows,
    }
