"""Words for counts in messages people read: ``1 time``, ``2 times``."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and the word, singular for exactly one; ``many`` when the plural is not
    ``word`` + ``s`` (``pod waits`` / ``pods wait``, ``replica`` / ``replicas``)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
