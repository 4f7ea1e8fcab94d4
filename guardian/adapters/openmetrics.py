"""Write OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`.

promtool wants every sample of one metric family together, each series in
time order, and the text to end with ``# EOF``. This module does that sorting
so callers can hand over samples in any order.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Sample:
    """One sample: a metric name, its labels, a timestamp in seconds and a value."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    timestamp: float = 0.0
    value: float = 0.0

    def __post_init__(self) -> None:
        if not _METRIC_NAME.match(self.name):
            raise ValueError(f"invalid metric name {self.name!r}")
        for key in self.labels:
            if not _LABEL_NAME.match(key) or key.startswith("__"):
                raise ValueError(f"invalid label name {key!r} on {self.name}")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series_key(labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def render_openmetrics(samples: Iterable[Sample]) -> str:
    """Render samples as OpenMetrics text, grouped by family and sorted by series and time."""
    families: dict[str, dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for sample in samples:
        families[sample.name][_series_key(sample.labels)].append((sample.timestamp, sample.value))
    lines: list[str] = []
    for name in sorted(families):
        for labels in sorted(families[name]):
            points = sorted(families[name][labels])
            for (ts, _), (next_ts, _) in itertools.pairwise(points):
                if ts == next_ts:
                    raise ValueError(f"duplicate timestamp {ts} for {name}{dict(labels)}")
            label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            prefix = f"{name}{{{label_text}}}" if label_text else name
            lines.extend(f"{prefix} {format_value(v)} {ts:.3f}" for ts, v in points)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
