"""RFC 3339 times on annotations, converted without reading any clock."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str | None) -> float | None:
    """Unix seconds, or None when absent or not a time with a zone (a date means midnight UTC)."""
    if not text:
        return None
    value = text.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        if len(value) != 10:  # a bare date is UTC midnight; a bare time is ambiguous
            return None
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
