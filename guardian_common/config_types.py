"""The settings vocabulary both programs share: a strict frozen model, durations, paths.

- :class:`StrictModel`: unknown keys are errors, instances are immutable, and a field's
  attribute docstring becomes its description (shown by ``model_json_schema``).
- :data:`Duration` (> 0) and :data:`DurationOrZero` (>= 0): seconds as a float, written as
  a Prometheus duration (``15s``, ``1m30s``, ``1h``) or a plain number of seconds (``90``,
  ``0.5``, also as a string, as flags and environment variables arrive). Booleans,
  infinities and anything over :data:`MAX_DURATION` are refused. The same parser
  everywhere, so ``30s`` means one thing.
- :data:`Int`, :data:`Float`, :data:`Bool`: strict scalars. YAML ``true`` is not 1 and
  ``"3"`` is not 3: a value of the wrong type is an error, never converted. Every int,
  float and bool field of a settings model uses them (a test walks the models to make
  sure); a field meant to take text, as environment variables do, says so with
  ``Strict(False)``.
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

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic.fields import FieldInfo

from guardian_common.durations import DurationRangeError, parse_duration

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
    except DurationRangeError:
        raise ValueError(f"must be at most 100y, got {text}") from None
    except ValueError:
        raise ValueError(f"not a valid duration string: {value!r} ({_SYNTAX})") from None


MAX_DURATION = 100 * 365 * 86400.0
"""100y, the longest duration a setting may have. Far beyond any sensible interval, timeout
or grace period, and far inside what timers and dates can hold: a typo such as
``99999999999999999y`` is an error at load, never an OverflowError while running."""


def at_most_max_duration(seconds: float) -> float:
    if seconds > MAX_DURATION:
        raise ValueError("must be at most 100y")
    return seconds


Duration = Annotated[
    float,
    BeforeValidator(to_seconds),
    Field(gt=0, allow_inf_nan=False),
    AfterValidator(at_most_max_duration),
]
"""Seconds, > 0: intervals and timeouts, where zero would mean 'never' or 'spin'."""

DurationOrZero = Annotated[
    float,
    BeforeValidator(to_seconds),
    Field(ge=0, allow_inf_nan=False),
    AfterValidator(at_most_max_duration),
]
"""Seconds, >= 0: offsets and waits where zero is meaningful ('at once', 'from the start')."""


def _exactly(what: str) -> BeforeValidator:
    """Refuse the conversions pydantic's lax mode would make, with a message that says
    what was written; everything else is left to the strict type check."""

    def check(value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(f"must be {what}, not the string {value!r}")
        if isinstance(value, bool) and what != _BOOL:
            raise ValueError(f"must be {what}, not a boolean ({str(value).lower()})")
        return value

    return BeforeValidator(check)


_BOOL = "true or false"

Int = Annotated[int, _exactly("an integer"), Strict()]
"""An integer, as written: not ``true``, ``"3"`` or ``3.0``."""
Float = Annotated[float, _exactly("a number"), Strict(), Field(allow_inf_nan=False)]
"""A finite number (an integer is one too): not ``true`` or ``"0.5"``."""
Bool = Annotated[bool, _exactly(_BOOL), Strict()]
"""``true`` or ``false``: not ``"yes"``, ``1`` or ``"true"``."""
NotBool = _exactly("a number")
"""For ``Literal`` numbers, which pydantic would match with ``true`` (True == 1)."""


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
