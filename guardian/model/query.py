"""What an instant query returned: samples plus the server's warnings."""

from __future__ import annotations

from dataclasses import dataclass

from guardian.model.labels import LabelSet


@dataclass(frozen=True, slots=True)
class PromSample:
    labels: LabelSet
    value: float


@dataclass(frozen=True, slots=True)
class QueryResult:
    """An instant-vector answer. ``warnings`` come from the response body (the client
    library drops them); ``partial`` is set when a warning says stores were missing."""

    samples: tuple[PromSample, ...]
    warnings: tuple[str, ...] = ()
    partial: bool = False
