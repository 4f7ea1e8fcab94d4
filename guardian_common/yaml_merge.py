"""Merge keys (``<<: *anchor``, ``<<: [*a, *b]``) applied to a composed YAML mapping.

Go's YAML libraries honour them for Prometheus, but differ in which value wins (see
:mod:`guardian_common.yamldoc`, which picks the order per kind of file).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import yaml

from guardian_common.errors import ConfigError

Path = tuple[str | int, ...]
MergeOrder = Literal["spec", "document"]
_MERGE_TAG = "tag:yaml.org,2002:merge"

MAX_DEPTH = 100
"""Nesting levels a document may have. Our files need fewer than ten."""


def clip(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def is_merge_key(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == _MERGE_TAG


_NodePair = tuple[yaml.Node, yaml.Node]


class Merger:
    """The effective key/value nodes of a mapping once its merge keys are applied."""

    def __init__(
        self,
        source: str,
        order: MergeOrder,
        spend: Callable[[yaml.Node, Path], None] | None = None,
    ) -> None:
        self.source = source
        self.order = order
        # Merged keys count against the document's node budget, so that a chain of
        # merges over merges cannot expand exponentially.
        self._spend = spend
        self._scalars = yaml.SafeLoader("")
        self.conflicts: list[tuple[str, int]] = []  # (key, line) of each replacement

    def key(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise ConfigError(
                "a mapping key must be a scalar", path=self.source, line=node.start_mark.line + 1
            )
        try:
            key = self._scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            reason = getattr(exc, "problem", None) or exc
            raise ConfigError(
                f"invalid mapping key {clip(node.value)}: {reason}",
                path=self.source,
                line=node.start_mark.line + 1,
            ) from None
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
        if len(active) >= MAX_DEPTH:
            raise ConfigError(
                f"merge keys (<<) nested deeper than {MAX_DEPTH} levels",
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
            if self._spend is not None:
                self._spend(key_node, path)
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
    return list(Merger(source, order).pairs(node).values())
