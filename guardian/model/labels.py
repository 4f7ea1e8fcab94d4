"""An immutable, hashable label set: the identity of a series and of an alert."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def is_valid_label_name(name: str) -> bool:
    """Prometheus's legacy (2.x) label-name rule."""
    return bool(LABEL_NAME.match(name))


def is_valid_metric_name(name: str) -> bool:
    return bool(METRIC_NAME.match(name))


class LabelSet(Mapping[str, str]):
    """A read-only label mapping, sorted by name, usable as a dict key.

    Equality and hash go by the sorted items, so two label sets with the same
    pairs are the same alert identity whatever order they were built in. Only a
    dict (in name order) and the hash are kept: a tuple of pairs beside it doubled
    the size of every alert and series identity held (tens of MiB at fleet scale).
    """

    __slots__ = ("_dict", "_hash")

    def __init__(self, labels: Mapping[str, str] | None = None) -> None:
        items = sorted((labels or {}).items())
        self._dict: dict[str, str] = dict(items)
        self._hash = hash(tuple(items))

    @classmethod
    def of(cls, labels: Mapping[str, str]) -> LabelSet:
        return labels if isinstance(labels, LabelSet) else cls(labels)

    def __getitem__(self, key: str) -> str:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LabelSet):
            return self._hash == other._hash and self._dict == other._dict
        if isinstance(other, dict):
            return self._dict == other
        if isinstance(other, Mapping):
            return self._dict == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        inner = ", ".join(f'{k}="{v}"' for k, v in self._dict.items())
        return f"{{{inner}}}"

    @property
    def items_sorted(self) -> tuple[tuple[str, str], ...]:
        """The pairs in name order (built on each call)."""
        return tuple(self._dict.items())

    def to_dict(self) -> dict[str, str]:
        return dict(self._dict)

    def without(self, *names: str) -> LabelSet:
        return LabelSet({k: v for k, v in self._dict.items() if k not in names})

    def __reduce__(self) -> tuple[Any, ...]:
        return (LabelSet, (self._dict,))


EMPTY_LABELS = LabelSet()


# Where an exporter names the node: ours and a ``guardian dcgm-config`` scrape say
# ``node``; dcgm-exporter's own series say ``Hostname`` (older ones ``hostname``).
NODE_LABELS = ("node", "Hostname", "hostname")


def node_of(labels: Mapping[str, str]) -> str:
    """The node a series (or an alert) is about; "" when it names none."""
    return next((labels[k] for k in NODE_LABELS if labels.get(k)), "")
