"""Active windows: weekdays and wall-clock hours in IANA zones, across DST changes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from guardian.model.policies_windows import next_window_start, parse_window


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


BERLIN = "Mon-Fri 07:30-20:30 Europe/Berlin"

# (window, instant in UTC, active?)
ACTIVE = [
    (BERLIN, "2026-03-27T06:29:59", False),  # Fri 07:29:59 CET
    (BERLIN, "2026-03-27T06:30:00", True),  # Fri 07:30 CET
    (BERLIN, "2026-03-27T19:29:59", True),  # Fri 20:29:59 CET
    (BERLIN, "2026-03-27T19:30:00", False),  # the end is exclusive
    (BERLIN, "2026-03-28T10:00:00", False),  # Saturday
    (BERLIN, "2026-03-30T05:29:59", False),  # Mon after DST began: 07:29:59 CEST
    (BERLIN, "2026-03-30T05:30:00", True),  # 07:30 CEST: local hours kept
    # The spring-forward gap: 02:00-03:00 does not exist on 2026-03-29.
    ("Sun 02:30-04:00 Europe/Berlin", "2026-03-29T00:59:59", False),  # 01:59:59 CET
    ("Sun 02:30-04:00 Europe/Berlin", "2026-03-29T01:00:00", True),  # 03:00 CEST
    # The fall-back hour: 02:00-03:00 happens twice on 2026-10-25.
    ("Sun 02:30-03:00 Europe/Berlin", "2026-10-25T00:30:00", True),  # 02:30 CEST
    ("Sun 02:30-03:00 Europe/Berlin", "2026-10-25T01:10:00", False),  # 02:10 CET
    ("Sun 02:30-03:00 Europe/Berlin", "2026-10-25T01:30:00", True),  # 02:30 CET
    ("Fri-Mon 00:00-24:00 UTC", "2026-03-29T23:59:59", True),  # Sunday, in a wrapping range
    ("Fri-Mon 00:00-24:00 UTC", "2026-03-31T12:00:00", False),  # Tuesday
    ("Mon-Fri 09:00-17:00 America/New_York", "2026-03-09T13:00:00", True),  # 09:00 EDT
    ("Mon-Fri 09:00-17:00 America/New_York", "2026-03-06T13:59:00", False),  # 08:59 EST
]


@pytest.mark.parametrize(("text", "at", "active"), ACTIVE)
def test_active(text: str, at: str, active: bool) -> None:
    assert parse_window(text).active(ts(at)) is active


# (window, from, the next opening)
NEXT = [
    (BERLIN, "2026-03-27T20:00:00", "2026-03-30T05:30:00"),  # Fri night -> Mon 07:30 CEST
    (BERLIN, "2026-03-27T10:00:00", "2026-03-27T10:00:00"),  # open: now
    ("Sun 02:30-04:00 Europe/Berlin", "2026-03-28T12:00:00", "2026-03-29T01:00:00"),  # gap end
    ("Sun 02:30-03:00 Europe/Berlin", "2026-10-24T12:00:00", "2026-10-25T00:30:00"),  # 1st 02:30
    ("Sun 02:30-03:00 Europe/Berlin", "2026-10-25T01:10:00", "2026-10-25T01:30:00"),  # 2nd 02:30
]


@pytest.mark.parametrize(("text", "at", "opens"), NEXT)
def test_next_start(text: str, at: str, opens: str) -> None:
    assert next_window_start((text,), ts(at)) == ts(opens)
    assert parse_window(text).active(ts(opens))


def test_several_windows_open_at_the_earliest() -> None:
    texts = ("Sat 10:00-12:00 UTC", "Mon 08:00-09:00 UTC")
    assert next_window_start(texts, ts("2026-03-27T20:00:00")) == ts("2026-03-28T10:00:00")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Mon-Fri 22:00-06:00 UTC", "a window across midnight is two windows"),
        ("Mon-Fri 07:00-07:00 UTC", "the end must be after the start"),
        ("Mon-Fri 07:00-20:00 Mars/Olympus", "unknown timezone 'Mars/Olympus'"),
        ("Monday 07:00-20:00 UTC", "expected e.g. 'Mon-Fri 07:30-20:30 Europe/Berlin'"),
        ("Mon-Fri 7:00-20:00 UTC", "expected e.g."),
        ("Mon-Fri 07:00-24:30 UTC", "the end must be after the start"),
    ],
)
def test_invalid_windows(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(".", r"\.")):
        parse_window(text)
