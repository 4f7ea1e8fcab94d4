"""Exception types. The type says whether retrying can help.

``ConfigError`` is the controller's: one type for "fix the file or flag" across both programs.
"""

from __future__ import annotations

from guardian_common.errors import ConfigError as ConfigError
from guardian_common.errors import GuardianError


class ExporterError(GuardianError):
    """Base class for every error the exporter raises on purpose."""


class BackendUnavailable(ExporterError):
    """The GPU backend cannot be used right now (init failed, GPU lost, driver gone).

    A later re-initialisation may succeed, so the collector retries with backoff. ``kind`` is a
    short snake_case error name for the ``guardian_exporter_errors_total`` counter.
    """

    def __init__(self, message: str, *, op: str, kind: str) -> None:
        super().__init__(message)
        self.op = op
        self.kind = kind
