"""RFC 3339 times, formatted and parsed without reading any clock.

One formatter for every output: annotations, status and messages use whole seconds;
the HTTP API uses milliseconds as Prometheus's ``/api/v1/alerts`` does (``.000`` dropped).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

_WHOLE_SECOND = re.compile(r"\.000Z$")


def rfc3339(ts: float, precision: Literal["s", "ms"] = "s") -> str:
    moment = datetime.fromtimestamp(ts, tz=UTC)
    if precision == "s":
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    text = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return _WHOLE_SECOND.sub("Z", text)


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
