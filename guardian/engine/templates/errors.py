"""Errors of the template package."""

from __future__ import annotations


class TemplateParseError(ValueError):
    """A template that does not parse. ``line`` and ``column`` (1-based, in bytes) locate it.

    The message reads like Go's, with the column added: ``template: NAME:LINE:COL: REASON``.
    """

    def __init__(self, name: str, line: int, column: int, reason: str) -> None:
        self.name = name
        self.line = line
        self.column = column
        self.reason = reason
        super().__init__(f"template: {name}:{line}:{column}: {reason}")


class ExecError(Exception):
    """A run-time error; ``str()`` is Go's full message (``template: NAME:L:C: executing …``)."""


class BreakLoop(Exception):
    """``{{break}}`` unwinding to its ``range``."""


class ContinueLoop(Exception):
    """``{{continue}}`` unwinding to its ``range``."""


class FuncError(Exception):
    """A template function failed; the executor reports ``error calling NAME: <message>``."""
