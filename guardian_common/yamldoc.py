"""YAML parsed with the line of every node, so errors can name file, line and field.

Parsing text is pure; reading the file is the caller's job.

Merge keys (``<<: *anchor``, ``<<: [*a, *b]``) are honoured, as Go's YAML libraries
honour them for Prometheus. Which value wins differs between them, so the caller picks:

- ``"spec"`` (yaml.v3, Prometheus rule files): keys written in the mapping win over
  merged ones, and earlier merge sources over later ones;
- ``"document"`` (yaml.v2, promtool test files): whatever comes later in the document
  wins, merged or written, the sources of a list applied last to first. The places where
  one value replaced another are kept in ``YamlDocument.merge_conflicts`` (yaml.v2's
  strict decoding refuses them in maps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from guardian_common.errors import ConfigError

Path = tuple[str | int, ...]
MergeOrder = Literal["spec", "document"]
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass
class YamlDocument:
    """Plain Python data plus the 1-based line of each node, keyed by its path."""

    data: Any
    source: str
    lines: dict[Path, int] = field(default_factory=dict)
    # Paths whose value replaced another through a merge key, with the line of each.
    merge_conflicts: dict[Path, int] = field(default_factory=dict)

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


def is_merge_key(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _MERGE_TAG


_NodePair = tuple[yaml.Node, yaml.Node]


class _Merger:
    """The effective key/value nodes of a mapping once its merge keys are applied."""

    def __init__(self, source: str, order: MergeOrder) -> None:
        self.source = source
        self.order = order
        self._scalars = yaml.SafeLoader("")
        self.conflicts: list[tuple[str, int]] = []  # (key, line) of each replacement

    def key(self, node: yaml.Node) -> str:
        key = self._scalars.construct_object(node, deep=True)
        return key if isinstance(key, str) else str(key)

    def sources(self, value: yaml.Node) -> list[yaml.MappingNode]:
        nodes = value.value if isinstance(value, yaml.SequenceNode) else [value]
        if not all(isinstance(n, yaml.MappingNode) for n in nodes):
            raise ConfigError(
                "a merge key (<<) takes a mapping or a list of mappings",
                path=self.source,
                line=value.start_mark.line + 1,
            )
        return [n for n in nodes if isinstance(n, yaml.MappingNode)]

    def pairs(
        self, node: yaml.MappingNode, path: Path = (), active: tuple[int, ...] = ()
    ) -> dict[str, _NodePair]:
        if id(node) in active:
            raise ConfigError(
                "a merge key (<<) refers to the mapping it is in",
                path=self.source,
                line=node.start_mark.line + 1,
            )
        active = (*active, id(node))
        explicit: dict[str, _NodePair] = {}
        out: dict[str, _NodePair] = {}
        for key_node, value_node in node.value:
            if is_merge_key(key_node):
                # Later sources first, so that earlier ones override them (both libraries).
                for merged in reversed(self.sources(value_node)):
                    for key, pair in self.pairs(merged, path, active).items():
                        self._set(out, key, pair, keep=key in explicit)
                continue
            key = self.key(key_node)
            if key in explicit:
                raise ConfigError(
                    f"mapping key {key!r} already defined",
                    path=self.source,
                    line=key_node.start_mark.line + 1,
                    field=dotted((*path, key)),
                )
            explicit[key] = (key_node, value_node)
            self._set(out, key, (key_node, value_node), keep=False)
        return out

    def _set(self, out: dict[str, _NodePair], key: str, pair: _NodePair, *, keep: bool) -> None:
        if key in out:
            self.conflicts.append((key, pair[0].start_mark.line + 1))
            if keep and self.order == "spec":
                return  # a key written in the mapping wins over merged ones
        out[key] = pair


def mapping_pairs(
    node: yaml.MappingNode, source: str = "", order: MergeOrder = "spec"
) -> list[_NodePair]:
    """The (key node, value node) pairs of ``node`` with its merge keys applied."""
    return list(_Merger(source, order).pairs(node).values())


class _Builder:
    def __init__(self, source: str, order: MergeOrder = "spec") -> None:
        self.source = source
        self.lines: dict[Path, int] = {}
        self.merge_conflicts: dict[Path, int] = {}
        self._scalars = yaml.SafeLoader("")
        self._merger = _Merger(source, order)

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            pairs = self._merger.pairs(node, path)
            for key, line in self._merger.conflicts:
                self.merge_conflicts.setdefault((*path, key), line)
            self._merger.conflicts.clear()
            for key, (key_node, value_node) in pairs.items():
                self.lines[(*path, key)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, (*path, key))
                self.lines[(*path, key)] = key_node.start_mark.line + 1
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.ScalarNode):
            return self._scalars.construct_object(node, deep=True)
        raise ConfigError("unsupported YAML node", path=self.source, line=self.lines[path])


def parse_yaml(text: str, source: str, merge: MergeOrder = "spec") -> YamlDocument:
    """Parse one YAML document. Raises ConfigError with the line of a syntax error,
    a duplicate key, or an alias/anchor the document uses (they are resolved). ``merge``
    says which value a merge key gives way to (see the module's docstring)."""
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
    builder = _Builder(source, merge)
    data = builder.build(node, ())
    return YamlDocument(
        data=data, source=source, lines=builder.lines, merge_conflicts=builder.merge_conflicts
    )
