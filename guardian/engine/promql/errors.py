"""The error of an expression Prometheus 2.42 refuses."""

from __future__ import annotations


class PromQLError(ValueError):
    """An expression Prometheus 2.42 refuses; the message reads like Prometheus's."""

    def __init__(self, text: str, pos: int, message: str) -> None:
        before = text[: max(0, min(pos, len(text)))]
        line = before.count("\n") + 1
        column = pos - (before.rfind("\n") if "\n" in before else -1)
        super().__init__(f"{line}:{column}: parse error: {message}")
        self.reason = message
