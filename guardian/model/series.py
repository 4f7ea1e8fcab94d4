"""Time series and samples as the engine writes them: pure data, checked at construction."""

from __future__ import annotations

import itertools
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from guardian.model.alerts import AlertState

METRIC_NAME_LABEL = "__name__"

# Prometheus's staleness marker (model/value/value.go StaleNaN). Any other NaN is an
# ordinary value, so the bit pattern is what matters, not math.isnan.
_STALE_NAN_BITS = 0x7FF0000000000002
STALE_NAN: float = struct.unpack("<d", struct.pack("<Q", _STALE_NAN_BITS))[0]

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

LabelKey = tuple[tuple[str, str], ...]


def is_stale_marker(value: float) -> bool:
    """True if ``value`` is the staleness marker (not merely some NaN)."""
    return math.isnan(value) and struct.pack("<d", value) == struct.pack("<Q", _STALE_NAN_BITS)


def label_key(labels: Mapping[str, str]) -> LabelKey:
    """A hashable identity for a label set: its items sorted by name."""
    return tuple(sorted(labels.items()))


@dataclass(frozen=True)
class TimeSeries:
    """One series and its samples, ready to be written.

    ``labels`` includes ``__name__``. Samples are ``(timestamp in ms, value)`` in strictly
    ascending time order. Label names follow Prometheus's rules; empty values are refused
    because Prometheus treats an empty label as an absent one.
    """

    labels: Mapping[str, str]
    samples: Sequence[tuple[int, float]]

    def __post_init__(self) -> None:
        for name, value in self.labels.items():
            if not isinstance(name, str) or not _LABEL_NAME.fullmatch(name):
                raise ValueError(f"invalid label name {name!r} in {dict(self.labels)}")
            if not isinstance(value, str) or not value:
                raise ValueError(f"label {name!r} must be a non-empty string, got {value!r}")
        if METRIC_NAME_LABEL not in self.labels:
            raise ValueError(f"series {dict(self.labels)} has no {METRIC_NAME_LABEL} label")
        samples = tuple((ts, float(v)) for ts, v in self.samples)
        for ts, _ in samples:
            if not isinstance(ts, int) or isinstance(ts, bool):
                raise ValueError(f"sample timestamp of {self.name} must be int ms, got {ts!r}")
        for (earlier, _), (later, _) in itertools.pairwise(samples):
            if later <= earlier:
                raise ValueError(
                    f"samples of {self.name} must be in strictly ascending time order: "
                    f"{later} follows {earlier}"
                )
        # Sorted by name: the order remote write requires and the one people read best.
        object.__setattr__(self, "labels", MappingProxyType(dict(sorted(self.labels.items()))))
        object.__setattr__(self, "samples", samples)

    @property
    def name(self) -> str:
        return self.labels[METRIC_NAME_LABEL]

    @property
    def key(self) -> LabelKey:
        """The series identity: its label set, sorted."""
        return tuple(self.labels.items())

    def __hash__(self) -> int:
        return hash((self.key, tuple(self.samples)))


@dataclass(frozen=True)
class ActiveAlertSample:
    """One pending or firing alert at one evaluation, as ``ALERTS`` reports it.

    ``labels`` is the alert's label set (it includes ``alertname``); ``active_at`` is when
    the alert became pending, in unix seconds. ``rule_labels`` are the rule's labels as
    written, templates unexpanded: Prometheus builds ``ALERTS`` on top of them.
    """

    labels: Mapping[str, str]
    state: AlertState
    active_at: float
    rule_labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.labels.get("alertname"):
            raise ValueError(f"alert labels {dict(self.labels)} have no alertname")
        if self.state not in (AlertState.PENDING, AlertState.FIRING):
            raise ValueError(f"an active alert is pending or firing, not {self.state!r}")
        if not math.isfinite(self.active_at):
            raise ValueError(f"active_at must be a finite unix time, got {self.active_at!r}")
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "rule_labels", MappingProxyType(dict(self.rule_labels)))

    def __hash__(self) -> int:
        return hash((label_key(self.labels), self.state, self.active_at))
