"""Words for counts in messages people read: ``1 time``, ``2 times``."""

from __future__ import annotations

import math


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and the word, singular for exactly one; ``many`` when the plural is not
    ``word`` + ``s`` (``pod waits`` / ``pods wait``, ``replica`` / ``replicas``)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def amount(value: float) -> str:
    """A quantity as people read it: one decimal from 1 on, two significant digits under
    1 (``0.0056``, not ``0.0``, which reads as nothing), ``0`` for nothing."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    rounded = float(f"{value:.2g}")
    if abs(rounded) >= 1:
        return f"{value:,.1f}"
    digits = min(6, 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{digits}f}".rstrip("0").rstrip(".") or "0"
