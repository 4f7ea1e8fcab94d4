"""Go's ``time``: ``Time.String`` and ``Time.Format`` for UTC instants (without the standard
library's year limits), the calendar fields, and :class:`Time`, a ``*time.Time``."""

from __future__ import annotations

from dataclasses import dataclass

from guardian.engine.golang.reflect import Stringer

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


@dataclass(frozen=True)
class Time(Stringer):
    """A UTC ``*time.Time``, kept as nanoseconds since the epoch; ``fmt`` prints its
    ``String()``."""

    unix_nanos: int

    def go_type(self) -> str:
        return "*time.Time"

    def go_string(self) -> str:
        return format_go_time(self.unix_nanos)


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


@dataclass(frozen=True)
class Civil:
    """The calendar fields of a UTC instant."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    nanos: int
    weekday: int  # 0 = Sunday
    yday: int  # 1-based day of the year


def civil(unix_nanos: int) -> Civil:
    seconds, nanos = divmod(unix_nanos, _NANOS_PER_SECOND)
    days, second_of_day = divmod(seconds, 86_400)
    year, month, day = _civil_from_days(days)
    jan1 = _days_from_civil(year, 1, 1)
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    return Civil(year, month, day, hour, minute, second, nanos, (days + 4) % 7, days - jan1 + 1)


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _year4(year: int) -> str:
    return f"-{-year:04d}" if year < 0 else f"{year:04d}"


def _fraction(c: Civil, digits: int, trim: bool, sep: str) -> str:
    text = f"{c.nanos:09d}"[:digits]
    if trim:
        text = text.rstrip("0")
        return sep + text if text else ""
    return sep + text


# Layout chunks of Go's time.Format, longest first where one is a prefix of another.
_ZONES = (
    "Z07:00:00",
    "-07:00:00",
    "Z070000",
    "-070000",
    "Z07:00",
    "-07:00",
    "Z0700",
    "-0700",
    "Z07",
    "-07",
)


def _chunk(layout: str, i: int, c: Civil) -> tuple[str, int] | None:
    """The expansion of a layout element starting at ``i`` and its length, or None."""
    rest = layout[i:]

    def lower_next(k: int) -> bool:
        return len(rest) > k and "a" <= rest[k] <= "z"

    if rest.startswith("January"):
        return MONTHS[c.month - 1], 7
    if rest.startswith("Jan") and not lower_next(3):
        return MONTHS[c.month - 1][:3], 3
    if rest.startswith("Monday"):
        return DAYS[c.weekday], 6
    if rest.startswith("Mon") and not lower_next(3):
        return DAYS[c.weekday][:3], 3
    if rest.startswith("MST"):
        return "UTC", 3
    if rest.startswith("2006"):
        return _year4(c.year), 4
    if rest.startswith("_2006"):
        return "_" + _year4(c.year), 5
    if rest.startswith("002"):
        return f"{c.yday:03d}", 3
    if rest.startswith("__2"):
        return f"{c.yday:>3d}", 3
    if rest.startswith("_2"):
        return f"{c.day:>2d}", 2
    if rest[:1] == "0" and rest[1:2] in ("1", "2", "3", "4", "5", "6"):
        value = {
            "1": c.month,
            "2": c.day,
            "3": c.hour % 12 or 12,
            "4": c.minute,
            "5": c.second,
            "6": c.year % 100,
        }[rest[1]]
        return f"{value:02d}", 2
    if rest.startswith("15"):
        return f"{c.hour:02d}", 2
    if rest[:1] in ("1", "2", "3", "4", "5"):
        short = {"1": c.month, "2": c.day, "3": c.hour % 12 or 12, "4": c.minute, "5": c.second}
        return str(short[rest[0]]), 1
    if rest.startswith("PM"):
        return ("PM" if c.hour >= 12 else "AM"), 2
    if rest.startswith("pm"):
        return ("pm" if c.hour >= 12 else "am"), 2
    for zone in _ZONES:
        if rest.startswith(zone):
            if zone[0] == "Z":
                return "Z", len(zone)
            return "+" + zone[1:].replace("07", "00"), len(zone)
    if rest[:1] in (".", ",") and rest[1:2] in ("0", "9"):
        digit = rest[1]
        j = 1
        while j < len(rest) and rest[j] == digit:
            j += 1
        if not (j < len(rest) and rest[j].isdigit()):
            return _fraction(c, j - 1, digit == "9", rest[0]), j
    return None


def format_layout(unix_nanos: int, layout: str) -> str:
    """``t.UTC().Format(layout)`` with Go's reference-time layout (``2006-01-02 15:04:05``)."""
    c = civil(unix_nanos)
    out: list[str] = []
    i = 0
    while i < len(layout):
        found = _chunk(layout, i, c)
        if found is None:
            out.append(layout[i])
            i += 1
            continue
        text, size = found
        out.append(text)
        i += size
    return "".join(out)
