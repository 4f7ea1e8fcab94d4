"""Go's ``time.Time.String`` for UTC instants, without the standard library's year limits."""

from __future__ import annotations

_NANOS_PER_SECOND = 1_000_000_000


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01."""
    days += 719_468
    era = days // 146_097
    doe = days - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    year = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return (year + 1 if month <= 2 else year), month, day


def format_go_time(unix_nanos: int) -> str:
    """``t.UTC().String()``: layout ``2006-01-02 15:04:05.999999999 -0700 MST``."""
    seconds, nanos = divmod(unix_nanos, _NANOS_PER_SECOND)
    days, second_of_day = divmod(seconds, 86_400)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    year_text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    return (
        f"{year_text}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        f"{fraction} +0000 UTC"
    )
