"""Rule groups in Prometheus's rule-file format, as validated data.

Fields mirror ``model/rulefmt`` of Prometheus 2.42 (the version the rule packs are
tested with). Durations are seconds. ``line`` points back into the file for messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class AlertingRule:
    """An ``alert:`` rule. Label and annotation values are template sources."""

    name: str
    expr: str
    for_seconds: float = 0.0
    keep_firing_for_seconds: float = 0.0
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _frozen(self.labels))
        object.__setattr__(self, "annotations", _frozen(self.annotations))

    @property
    def key(self) -> str:
        """Name plus static labels: how state follows a rule across reloads (as Prometheus)."""
        labels = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{labels}}}"


@dataclass(frozen=True)
class RecordingRule:
    """A ``record:`` rule. The engine keeps it for rendering; Prometheus evaluates it."""

    name: str
    expr: str
    labels: Mapping[str, str] = field(default_factory=dict)
    line: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _frozen(self.labels))


Rule = AlertingRule | RecordingRule


@dataclass(frozen=True)
class RuleGroup:
    """One group. ``interval_seconds`` is None when the file leaves it to the default."""

    name: str
    file: str
    rules: tuple[Rule, ...]
    interval_seconds: float | None = None
    limit: int = 0
    line: int = 0

    @property
    def key(self) -> str:
        """Prometheus's group key: file and name (rules/manager.go GroupKey)."""
        return f"{self.file};{self.name}"

    @property
    def alerting_rules(self) -> tuple[AlertingRule, ...]:
        return tuple(r for r in self.rules if isinstance(r, AlertingRule))

    @property
    def recording_rules(self) -> tuple[RecordingRule, ...]:
        return tuple(r for r in self.rules if isinstance(r, RecordingRule))


@dataclass(frozen=True)
class RuleFile:
    path: str
    groups: tuple[RuleGroup, ...]
