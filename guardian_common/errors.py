"""Exception types. The type says whether retrying can help."""

from __future__ import annotations


class GuardianError(Exception):
    """Base class for every error GPU Guardian raises on purpose."""


class ConfigError(GuardianError):
    """Invalid configuration, rule or policy input. Retrying cannot help; fix the file.

    The message names the file, the line (when known) and the field, on one line: control
    characters (a newline in a YAML error, escapes in a hostile file) are shown escaped.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path if path is None else one_line(path)
        self.line = line
        self.field = field if field is None else one_line(field)
        self.reason = one_line(message)
        path, field, message = self.path, self.field, self.reason
        where = ""
        if path is not None:
            where = path if line is None else f"{path}:{line}"
        if field:
            where = f"{where}: {field}" if where else field
        super().__init__(f"{where}: {message}" if where else message)


class PermanentError(GuardianError):
    """An operation failed in a way that retrying will not fix (bad request, forbidden)."""


class TransientError(GuardianError):
    """An operation failed in a way that may succeed later (timeout, 5xx, 429, conflict).

    ``delay`` is a hint in seconds for when to try again; ``None`` means the caller decides.
    """

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


MAX_REPORTED = 100
"""Findings kept in one ConfigErrors; a hostile file can have tens of thousands, and the
first hundred say enough."""


class ConfigErrors(ConfigError):
    """Several findings in one input. ``errors`` holds each (the first MAX_REPORTED, then
    one that counts the rest); the message lists them all."""

    def __init__(self, errors: list[ConfigError]) -> None:
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        first = errors[0]
        super().__init__(first.reason, path=first.path, line=first.line, field=first.field)
        shown = [e for e in errors if not isinstance(e, OmittedErrors)]
        omitted = sum(e.count for e in errors if isinstance(e, OmittedErrors))
        omitted += max(0, len(shown) - MAX_REPORTED)
        self.errors: tuple[ConfigError, ...] = tuple(shown[:MAX_REPORTED])
        if omitted:
            self.errors += (OmittedErrors(omitted),)
        self.args = ("\n".join(str(e) for e in errors),)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def one_line(text: str) -> str:
    """``text`` with every non-printable character escaped (``\\n``, ``\\x1b``), so it
    cannot break a one-line message or drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OmittedErrors(ConfigError):
    """Stands for the findings beyond MAX_REPORTED."""

    def __init__(self, count: int) -> None:
        super().__init__(f"... and {count} more finding(s)")
        self.count = count
