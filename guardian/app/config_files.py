"""Read and parse a set of input files, reporting the findings of all of them at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from guardian_common.errors import ConfigError, ConfigErrors

T = TypeVar("T")


def parse_files(paths: Sequence[str], parse: Callable[[str, str], T]) -> list[T]:
    """``parse(text, path)`` for every file; one unreadable or invalid file does not hide
    the problems of the others: everything found is raised together as ConfigErrors."""
    results: list[T] = []
    errors: list[ConfigError] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            errors.append(ConfigError(f"cannot read: {exc.strerror or exc}", path=path))
            continue
        try:
            results.append(parse(text, path))
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return results
