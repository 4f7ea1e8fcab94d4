"""YAML parsed with the line of every node, so errors can name file, line and field.

Parsing text is pure; reading the file is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from guardian_common.errors import ConfigError

Path = tuple[str | int, ...]


@dataclass
class YamlDocument:
    """Plain Python data plus the 1-based line of each node, keyed by its path."""

    data: Any
    source: str
    lines: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return None

    def error(self, message: str, path: Path, field_name: str | None = None) -> ConfigError:
        return ConfigError(
            message,
            path=self.source,
            line=self.line(path),
            field=field_name if field_name is not None else dotted(path),
        )


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[Path, int] = {}
        self._scalars = yaml.SafeLoader("")

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.build(key_node, (*path, "<key>"))
                if not isinstance(key, str):
                    key = str(key)
                if key in out:
                    raise ConfigError(
                        f"mapping key {key!r} already defined",
                        path=self.source,
                        line=key_node.start_mark.line + 1,
                        field=dotted((*path, key)),
                    )
                self.lines[(*path, key)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, (*path, key))
                self.lines[(*path, key)] = key_node.start_mark.line + 1
            self.lines.pop((*path, "<key>"), None)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.ScalarNode):
            return self._scalars.construct_object(node, deep=True)
        raise ConfigError("unsupported YAML node", path=self.source, line=self.lines[path])


def parse_yaml(text: str, source: str) -> YamlDocument:
    """Parse one YAML document. Raises ConfigError with the line of a syntax error,
    a duplicate key, or an alias/anchor the document uses (they are resolved)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {exc.problem or exc}", path=source, line=line) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=source) from exc
    if node is None:
        return YamlDocument(data=None, source=source)
    builder = _Builder(source)
    data = builder.build(node, ())
    return YamlDocument(data=data, source=source, lines=builder.lines)
