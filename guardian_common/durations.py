"""Prometheus duration syntax (common/model ParseDuration): ``1h30m``, ``90s``, ``1d``, ``5ms``."""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"^(?:(?P<y>[0-9]+)y)?(?:(?P<w>[0-9]+)w)?(?:(?P<d>[0-9]+)d)?(?:(?P<h>[0-9]+)h)?"
    r"(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?(?:(?P<ms>[0-9]+)ms)?$"
)
# Prometheus keeps durations as int64 nanoseconds and refuses longer ones (about 292y).
MAX_MS = (2**63 - 1) // 1_000_000
_UNIT_MS = {
    "y": 365 * 24 * 3600 * 1000,
    "w": 7 * 24 * 3600 * 1000,
    "d": 24 * 3600 * 1000,
    "h": 3600 * 1000,
    "m": 60 * 1000,
    "s": 1000,
    "ms": 1,
}


class DurationRangeError(ValueError):
    """A well-formed duration too long for Prometheus (and for us)."""


def parse_duration_ms(text: str) -> int:
    """Milliseconds in a Prometheus duration. Raises ValueError with the reason."""
    if text == "0":
        return 0
    match = _DURATION.match(text)
    if not text or match is None:
        raise ValueError(
            f"not a valid duration string: {text!r} (use units y, w, d, h, m, s, ms, "
            "largest first, whole numbers only, e.g. 1h30m)"
        )
    # Each number is checked before int(), which is slow (and refused) for huge digit strings.
    total = 0
    for unit, value in match.groupdict().items():
        if value:
            if len(value) > 19:
                raise DurationRangeError(f"duration out of range: {text!r}")
            total += int(value) * _UNIT_MS[unit]
    if total > MAX_MS:
        raise DurationRangeError(f"duration out of range: {text!r} (at most about 292y)")
    return total


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration."""
    return parse_duration_ms(text) / 1000.0


def format_duration(seconds: float) -> str:
    """The shortest Prometheus duration string for ``seconds`` (millisecond resolution)."""
    ms = round(seconds * 1000)
    if ms == 0:
        return "0s"
    out = []
    for unit in ("y", "w", "d", "h", "m", "s", "ms"):
        size = _UNIT_MS[unit]
        if ms >= size:
            out.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(out)
