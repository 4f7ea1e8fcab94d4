"""YAML parsed with the line of every node, so errors can name file, line and field.

Parsing text is pure; reading the file is the caller's job (:mod:`guardian_common.files`).
Hostile input fails as a ConfigError, never as a traceback, a hang or a memory blow-up:

- nesting is bounded (:data:`MAX_DEPTH` levels), and the node graph is built without
  recursion, so 3,000 levels cannot exhaust the stack;
- a document has at most :data:`MAX_NODES` nodes (or one per :data:`BYTES_PER_NODE`
  bytes of a larger text), an alias counted at every use, so a "billion laughs" file
  stops after that many instead of expanding exponentially;
- an alias inside the node it refers to (a cycle) is an error;
- control characters, invalid scalars (``2024-13-45``, a 5,000-digit integer) and
  unknown tags are errors at their line.

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

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from guardian_common.errors import ConfigError
from guardian_common.yaml_merge import (
    MAX_DEPTH,
    MergeOrder,
    Merger,
    Path,
    clip,
    dotted,
    is_merge_key,
    mapping_pairs,
)

# Re-exported: callers read merge-aware mappings through this module.
__all__ = [
    "MAX_DEPTH",
    "MergeOrder",
    "Path",
    "YamlDocument",
    "compose",
    "dotted",
    "is_merge_key",
    "mapping_pairs",
    "node_budget",
    "parse_yaml",
]

MAX_NODES = 50_000
"""Nodes a document may have, an alias counted as often as it is used: a rule file of
3,000 rules, a tenth of a second and 10 MiB to refuse a "billion laughs"."""
BYTES_PER_NODE = 20
"""A text longer than MAX_NODES times this may have one node per this many bytes, so a
larger file limit (``max_rule_file_bytes``) allows more nodes too."""

# libyaml where PyYAML was built with it: parsing 1 MiB takes a fraction of the time.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# What YAML allows in a stream (PyYAML's Reader checks the same).
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


@dataclass
class YamlDocument:
    """Plain Python data plus the 1-based line of each node, keyed by its path."""

    data: Any
    source: str
    lines: dict[Path, int] = field(default_factory=dict)
    node: yaml.Node | None = None
    """The composed node graph, for readers that need the source text of scalars."""
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


class _Builder:
    def __init__(
        self, source: str, max_nodes: int, max_depth: int, order: MergeOrder = "spec"
    ) -> None:
        self.source = source
        self.lines: dict[Path, int] = {}
        self.merge_conflicts: dict[Path, int] = {}
        self._scalars = yaml.SafeLoader("")
        self._budget = max_nodes
        self._max_nodes = max_nodes
        self._max_depth = max_depth
        self._merger = Merger(source, order, self._spend)

    def build(self, node: yaml.Node, path: Path) -> Any:
        self._spend(node, path)
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
            return self._scalar(node, path)
        raise ConfigError("unsupported YAML node", path=self.source, line=self.lines[path])

    def _spend(self, node: yaml.Node, path: Path) -> None:
        """One node of the budget; aliases make the same node count again."""
        self._budget -= 1
        if self._budget < 0:
            raise self._error(
                f"more than {self._max_nodes} nodes once aliases are expanded", node, path
            )
        if len(path) > self._max_depth:
            raise self._error(f"nested deeper than {self._max_depth} levels", node, path)

    def _scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        try:
            return self._scalars.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            reason = getattr(exc, "problem", None) or exc
            raise self._error(f"invalid YAML value: {reason}", node, path) from None
        except (ValueError, OverflowError) as exc:  # 2024-13-45, a 5,000-digit integer
            raise self._error(
                f"invalid {_kind(node.tag)} {clip(node.value)}: {exc}", node, path
            ) from None

    def _error(self, message: str, node: yaml.Node, path: Path) -> ConfigError:
        parts = tuple(p for p in path if p != "<key>")
        return ConfigError(
            message, path=self.source, line=node.start_mark.line + 1, field=dotted(parts) or None
        )


class _Open:
    """A collection whose end event has not come yet."""

    __slots__ = ("anchor", "key", "node")

    def __init__(self, node: yaml.CollectionNode, anchor: str | None) -> None:
        self.node = node
        self.anchor = anchor
        self.key: yaml.Node | None = None


class _Composer:
    """The node graph of one document, from the parser's events, without recursion.

    Like PyYAML's Composer, but bounded: at most ``max_depth`` levels and ``max_nodes``
    nodes, and an anchor is usable only after its node ends (no cycles). An anchor may
    be defined again; later aliases use the new node, as YAML 1.2 and Go's parser say.
    """

    def __init__(self, loader: Any, source: str, max_nodes: int, max_depth: int) -> None:
        self.loader = loader  # the stubs leave the event API untyped
        self.source = source
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.anchors: dict[str, yaml.Node] = {}
        self.stack: list[_Open] = []
        self.count = 0

    def document(self) -> yaml.Node | None:
        self.loader.get_event()  # stream start
        if self.loader.check_event(yaml.StreamEndEvent):
            return None
        self.loader.get_event()  # document start
        root = self._root()
        self.loader.get_event()  # document end
        if not self.loader.check_event(yaml.StreamEndEvent):
            event = self.loader.get_event()
            raise self._error("expected a single document, found another", event)
        return root

    def _root(self) -> yaml.Node:
        while True:
            event = self.loader.get_event()
            node: yaml.Node
            if isinstance(event, yaml.CollectionEndEvent):
                done = self.stack.pop()
                node = done.node
                node.end_mark = event.end_mark
                if done.anchor is not None:
                    self.anchors[done.anchor] = node
            elif isinstance(event, yaml.AliasEvent):
                node = self._alias(event)
            elif isinstance(event, yaml.CollectionStartEvent):
                self._open(event)
                continue
            else:
                node = self._scalar(event)
            if not self.stack:
                return node
            self._attach(node)

    def _count(self, event: Any) -> None:
        self.count += 1
        if self.count > self.max_nodes:
            raise self._error(f"more than {self.max_nodes} nodes", event)
        if len(self.stack) > self.max_depth:
            raise self._error(f"nested deeper than {self.max_depth} levels", event)

    def _scalar(self, event: Any) -> yaml.ScalarNode:
        self._count(event)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        style = event.style or None  # libyaml says '' for plain, PyYAML None
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        return node

    def _open(self, event: Any) -> None:
        self._count(event)
        kind: type[yaml.CollectionNode] = (
            yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
        )
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(kind, None, event.implicit)
        node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
        self.stack.append(_Open(node, event.anchor))

    def _alias(self, event: Any) -> yaml.Node:
        self._count(event)
        found = self.anchors.get(event.anchor)
        if found is not None:
            return found
        if any(open_.anchor == event.anchor for open_ in self.stack):
            raise self._error(f"alias *{event.anchor} is inside its own anchor (a cycle)", event)
        raise self._error(f"alias *{event.anchor} has no anchor &{event.anchor} before it", event)

    def _attach(self, node: yaml.Node) -> None:
        parent = self.stack[-1]
        if isinstance(parent.node, yaml.SequenceNode):
            parent.node.value.append(node)
        elif parent.key is None:
            parent.key = node
        else:
            parent.node.value.append((parent.key, node))
            parent.key = None

    def _error(self, message: str, event: Any) -> ConfigError:
        return ConfigError(message, path=self.source, line=event.start_mark.line + 1)


def _kind(tag: str) -> str:
    return tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else "value"


def node_budget(text: str) -> int:
    """The most nodes ``text`` may have: MAX_NODES, more for a long text."""
    return max(MAX_NODES, len(text) // BYTES_PER_NODE)


def compose(
    text: str, source: str, *, max_nodes: int | None = None, max_depth: int = MAX_DEPTH
) -> yaml.Node | None:
    """The node graph of the one YAML document in ``text``. Raises ConfigError.
    ``max_nodes`` defaults to :func:`node_budget`."""
    if max_nodes is None:
        max_nodes = node_budget(text)
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        column = bad.start() - text.rfind("\n", 0, bad.start())
        raise ConfigError(
            f"control character U+{ord(bad.group()):04X} at column {column} is not allowed in YAML",
            path=source,
            line=text.count("\n", 0, bad.start()) + 1,
        )
    loader = _Loader(text)
    try:
        return _Composer(loader, source, max_nodes, max_depth).document()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {exc.problem or exc}", path=source, line=line) from None
    except yaml.YAMLError as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ConfigError(f"invalid YAML: {reason}", path=source) from None
    finally:
        loader.dispose()


def parse_yaml(
    text: str,
    source: str,
    merge: MergeOrder = "spec",
    *,
    max_nodes: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> YamlDocument:
    """Parse one YAML document. Raises ConfigError with the line of a syntax error,
    a duplicate key, a limit exceeded, or an alias/anchor the document uses (they are
    resolved). ``merge`` says which value a merge key gives way to (see the module's
    docstring)."""
    if max_nodes is None:
        max_nodes = node_budget(text)
    node = compose(text, source, max_nodes=max_nodes, max_depth=max_depth)
    if node is None:
        return YamlDocument(data=None, source=source)
    builder = _Builder(source, max_nodes, max_depth, merge)
    data = builder.build(node, ())
    return YamlDocument(
        data=data,
        source=source,
        lines=builder.lines,
        node=node,
        merge_conflicts=builder.merge_conflicts,
    )
