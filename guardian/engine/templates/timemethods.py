"""The methods of ``*time.Time`` a template can call on what ``toTime`` returns."""

from __future__ import annotations

from collections.abc import Callable

from guardian.engine.golang.time import DAYS, MONTHS, Time, civil, format_go_time, format_layout
from guardian.engine.templates.signature import Func


def _methods(t: Time) -> dict[str, Callable[..., object]]:
    ns = t.unix_nanos
    c = civil(ns)
    return {
        "Unix": lambda: ns // 1_000_000_000,
        "UnixMilli": lambda: ns // 1_000_000,
        "UnixMicro": lambda: ns // 1000,
        "UnixNano": lambda: ns,
        "UTC": lambda: t,
        "Local": lambda: t,
        "Year": lambda: c.year,
        "Month": lambda: MONTHS[c.month - 1],  # a time.Month prints its name
        "Day": lambda: c.day,
        "Hour": lambda: c.hour,
        "Minute": lambda: c.minute,
        "Second": lambda: c.second,
        "Nanosecond": lambda: c.nanos,
        "YearDay": lambda: c.yday,
        "Weekday": lambda: DAYS[c.weekday],
        "IsZero": lambda: ns == -62_135_596_800 * 1_000_000_000,
        "String": lambda: format_go_time(ns),
        "Format": lambda layout: format_layout(ns, layout),
    }


def time_method(t: Time, name: str) -> Func | None:
    """The bound method ``name`` of ``t``, or None when time.Time has no such method here."""
    fn = _methods(t).get(name)
    if fn is None:
        return None
    return Func(fn, ("string",) if name == "Format" else ())
