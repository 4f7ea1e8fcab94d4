"""Read and parse a set of input files, reporting the findings of all of them at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.files import MAX_FILE_BYTES, read_text

T = TypeVar("T")


def parse_files(
    paths: Sequence[str], parse: Callable[[str, str], T], max_bytes: int = MAX_FILE_BYTES
) -> list[T]:
    """``parse(text, path)`` for every file; one unreadable or invalid file does not hide
    the problems of the others: everything found is raised together as ConfigErrors.
    Files are read as :func:`guardian_common.files.read_text` reads them: regular files
    of at most ``max_bytes``, UTF-8."""
    results: list[T] = []
    errors: list[ConfigError] = []
    for path in paths:
        try:
            results.append(parse(read_text(path, max_bytes), path))
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return results
