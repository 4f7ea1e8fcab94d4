"""Active windows: weekdays and wall-clock times in an IANA timezone, kube-downscaler style.

``Mon-Fri 07:30-20:30 Europe/Berlin`` (a day range, inclusive, wrapping past Sunday is
fine: ``Fri-Mon``), or one day, ``Sat 10:00-14:00 UTC``. The start is inclusive, the
end exclusive and after the start on the same day (``24:00`` ends at midnight); a window
across midnight is two windows. Times are the wall clock of the zone, so across a DST
change a window keeps its local hours: on a day that skips the start time, the window
opens at the first instant the wall clock passes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_DAY = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
WINDOW_PATTERN = (
    rf"^{_DAY}(-{_DAY})? ([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]|24):([0-5][0-9]) "
    r"[A-Za-z][A-Za-z0-9_+/-]*$"
)
"""The syntax, also the CRD's ``pattern`` (the zone's existence is checked here only)."""
_WINDOW = re.compile(WINDOW_PATTERN)


@dataclass(frozen=True)
class Window:
    days: frozenset[int]  # 0 = Monday
    start: int  # minutes after midnight, wall clock
    end: int  # exclusive, <= 1440
    zone: ZoneInfo
    text: str

    def _local(self, now: float) -> datetime:
        return datetime.fromtimestamp(now, self.zone)

    def active(self, now: float) -> bool:
        local = self._local(now)
        minute = local.hour * 60 + local.minute
        return local.weekday() in self.days and self.start <= minute < self.end

    def next_start(self, now: float) -> float:
        """The first instant at or after ``now`` inside this window."""
        if self.active(now):
            return now
        today = self._local(now).date()
        for offset in range(8):
            day = today + timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            later = [t for t in _openings(day, self.start, self.zone) if t > now]
            if later:
                return min(later)
        raise AssertionError(f"window {self.text!r} never opens")  # days is never empty


def _openings(day: date, minute: int, zone: ZoneInfo) -> list[float]:
    """When the wall clock reaches ``minute`` on ``day``: twice in a repeated hour."""
    first = wall_instant(day, minute, zone)
    naive = datetime.combine(day, time(minute // 60, minute % 60)) if minute < 1440 else None
    if naive is None:
        return [first]
    second = naive.replace(tzinfo=zone, fold=1).timestamp()
    same = datetime.fromtimestamp(second, zone).replace(tzinfo=None) == naive
    return [first, second] if same and second != first else [first]


def wall_instant(day: date, minute: int, zone: ZoneInfo) -> float:
    """The first instant (epoch seconds) at which the wall clock of ``zone`` on ``day``
    reads ``minute`` or later: the earlier one when it reads it twice (DST ends), the end
    of the gap when it skips it (DST starts)."""
    if minute >= 1440:
        return wall_instant(day + timedelta(days=1), 0, zone)
    naive = datetime.combine(day, time(minute // 60, minute % 60))
    first = naive.replace(tzinfo=zone, fold=0).timestamp()
    if datetime.fromtimestamp(first, zone).replace(tzinfo=None) == naive:
        return first
    # In a gap: fold=1 reads the time with the offset after the change (earlier).
    low = int(naive.replace(tzinfo=zone, fold=1).timestamp())
    high = int(first)
    while low < high:  # the first second whose wall clock is >= naive
        mid = (low + high) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= naive:
            high = mid
        else:
            low = mid + 1
    return float(low)


@lru_cache(maxsize=256)
def parse_window(text: str) -> Window:
    """Raises ValueError naming what is wrong."""
    found = _WINDOW.match(text.strip())
    if found is None:
        raise ValueError(
            f"invalid window {text!r}: expected e.g. 'Mon-Fri 07:30-20:30 Europe/Berlin'"
        )
    first, _, last, h1, m1, h2, m2 = found.groups()[:7]
    zone_name = text.strip().rsplit(" ", 1)[1]
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long, a folder
        raise ValueError(f"invalid window {text!r}: unknown timezone {zone_name!r}") from None
    start, end = int(h1) * 60 + int(m1), int(h2) * 60 + int(m2)
    if end > 1440 or end <= start:
        raise ValueError(
            f"invalid window {text!r}: the end must be after the start on the same day "
            "(a window across midnight is two windows)"
        )
    a = DAYS.index(first)
    b = DAYS.index(last) if last else a
    days = frozenset((a + i) % 7 for i in range(((b - a) % 7) + 1))
    return Window(days, start, end, zone, text.strip())


def _check(text: str) -> str:
    parse_window(text)
    return text.strip()


ActiveWindow = Annotated[str, AfterValidator(_check)]


def windows_active(texts: tuple[str, ...], now: float) -> bool:
    return not texts or any(parse_window(t).active(now) for t in texts)


def next_window_start(texts: tuple[str, ...], now: float) -> float:
    """``now`` when inside a window (or there are none), else when the next one opens."""
    if not texts:
        return now
    return min(parse_window(t).next_start(now) for t in texts)
