"""Exception types. The type says whether retrying can help.

The exporter keeps its own small hierarchy so that it never depends on the controller's packages.
"""

from __future__ import annotations


class ExporterError(Exception):
    """Base class for every error the exporter raises on purpose."""


class ConfigError(ExporterError):
    """Invalid configuration or scenario input. Retrying cannot help; fix the file or flag.

    The message names the file, the line (when known) and the field.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if path is not None:
            where = path if line is None else f"{path}:{line}"
        if field:
            where = f"{where}: {field}" if where else field
        super().__init__(f"{where}: {message}" if where else message)


class BackendUnavailable(ExporterError):
    """The GPU backend cannot be used right now (init failed, GPU lost, driver gone).

    A later re-initialisation may succeed, so the collector retries with backoff. ``kind`` is a
    short snake_case error name for the ``guardian_exporter_errors_total`` counter.
    """

    def __init__(self, message: str, *, op: str, kind: str) -> None:
        super().__init__(message)
        self.op = op
        self.kind = kind
