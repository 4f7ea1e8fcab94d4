"""The settings vocabulary both programs share: a strict frozen model, durations, paths.

- :class:`StrictModel`: unknown keys are errors, instances are immutable, and a field's
  attribute docstring becomes its description (shown by ``model_json_schema``).
- :data:`Duration` (> 0) and :data:`DurationOrZero` (>= 0): seconds as a float, written as
  a Prometheus duration (``15s``, ``1m30s``, ``1h``) or a plain number of seconds (``90``,
  ``0.5``, also as a string, as flags and environment variables arrive). Booleans and
  infinities are refused. The same parser everywhere, so ``30s`` means one thing.
- :data:`ConfigPath`: a file path that :meth:`StrictModel.resolved` takes relative to the
  config file's directory, as Prometheus does, so a config works wherever it is started.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.fields import FieldInfo

from guardian_common.durations import parse_duration

_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
_SYNTAX = "a number of seconds, or units y w d h m s ms largest first, e.g. 90, 15s or 1m30s"


def to_seconds(value: object) -> object:
    """Seconds for a duration written as a number or a string; anything else unchanged
    (pydantic then reports it). Raises ValueError for an invalid string or a boolean."""
    if isinstance(value, bool):  # YAML `true` is not a duration, though bool is an int
        raise ValueError(f"must be a duration ({_SYNTAX}), not a boolean")
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _NUMBER.match(text):
        return float(text)
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(f"not a valid duration string: {value!r} ({_SYNTAX})") from None


Duration = Annotated[float, BeforeValidator(to_seconds), Field(gt=0, allow_inf_nan=False)]
"""Seconds, > 0: intervals and timeouts, where zero would mean 'never' or 'spin'."""

DurationOrZero = Annotated[float, BeforeValidator(to_seconds), Field(ge=0, allow_inf_nan=False)]
"""Seconds, >= 0: offsets and waits where zero is meaningful ('at once', 'from the start')."""


@dataclass(frozen=True)
class RelativePath:
    """Marks a ``str`` field as a path relative to the config file's directory.

    ``keep`` lists values that are not paths and stay as written (SQLite's ``:memory:``).
    """

    keep: frozenset[str] = frozenset()

    def resolve(self, value: str, base_dir: Path) -> str:
        if value in self.keep or Path(value).is_absolute():
            return value
        return str(base_dir / value)


ConfigPath = Annotated[str, RelativePath()]
"""A file path; relative ones are taken from the config file's directory."""


class StrictModel(BaseModel):
    """Base of every settings section and every validated document."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    def resolved(self, base_dir: Path) -> Self:
        """A copy with every :data:`ConfigPath` field, here and in nested sections, taken
        relative to ``base_dir``. Absolute paths stay as they are."""
        updates: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            marker = _path_marker(info)
            new = _resolve(value, base_dir, marker) if marker else _nested(value, base_dir)
            if new is not value:
                updates[name] = new
        return self.model_copy(update=updates) if updates else self


def _path_marker(info: FieldInfo) -> RelativePath | None:
    """The field's RelativePath, also inside ``| None``, ``list[...]`` or ``tuple[...]``."""
    found = _first_marker(info.metadata)
    return found if found is not None else _marker_in(info.annotation)


def _marker_in(annotation: Any) -> RelativePath | None:
    if typing.get_origin(annotation) is Annotated:
        base, *extras = typing.get_args(annotation)
        found = _first_marker(extras)
        return found if found is not None else _marker_in(base)
    for arg in typing.get_args(annotation):
        found = _marker_in(arg)
        if found is not None:
            return found
    return None


def _first_marker(items: Iterable[Any]) -> RelativePath | None:
    return next((item for item in items if isinstance(item, RelativePath)), None)


def _resolve(value: Any, base_dir: Path, marker: RelativePath) -> Any:
    if isinstance(value, str):
        return marker.resolve(value, base_dir)
    if isinstance(value, list | tuple):
        return type(value)(_resolve(item, base_dir, marker) for item in value)
    return value  # None


def _nested(value: Any, base_dir: Path) -> Any:
    if isinstance(value, StrictModel):
        return value.resolved(base_dir)
    if isinstance(value, list | tuple) and any(isinstance(v, StrictModel) for v in value):
        return type(value)(_nested(item, base_dir) for item in value)
    if isinstance(value, dict) and any(isinstance(v, StrictModel) for v in value.values()):
        return {key: _nested(item, base_dir) for key, item in value.items()}
    return value
