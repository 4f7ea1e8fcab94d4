"""Find the source line of a field in YAML text, for error messages. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml


def line_of(text: str, loc: Sequence[int | str]) -> int | None:
    """Best-effort 1-based line of the value at ``loc`` (keys and list indexes), or None."""
    try:
        node: Any = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line: int | None = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line
