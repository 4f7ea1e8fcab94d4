"""Where a finding goes, and when nobody should be disturbed. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from guardian.model.notifications import Finding

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Routes:
    """The first map that names the finding's value wins: policy, namespace, gpu_group;
    else the default channel. The channel is chosen when an episode is first posted
    and kept for its whole life, so its thread stays in one place."""

    default_channel: str
    by_policy: Mapping[str, str] = field(default_factory=dict)
    by_namespace: Mapping[str, str] = field(default_factory=dict)
    by_gpu_group: Mapping[str, str] = field(default_factory=dict)

    def channel_for(self, finding: Finding) -> str:
        for table, key in (
            (self.by_policy, finding.policy),
            (self.by_namespace, finding.namespace),
            (self.by_gpu_group, finding.gpu_group),
        ):
            if key is not None and key in table:
                return table[key]
        return self.default_channel


@dataclass(frozen=True)
class MuteWindow:
    """Absolute (``start``..``end`` unix seconds) and/or recurring (weekdays and a daily
    ``HH:MM`` range in ``tz``; a range that ends before it starts spans midnight).
    Empty ``namespaces`` means every namespace."""

    tz: tzinfo
    start: float | None = None
    end: float | None = None
    weekdays: frozenset[int] = frozenset()  # 0 = Monday
    daily_start: int | None = None  # minutes after midnight
    daily_end: int | None = None
    namespaces: frozenset[str] = frozenset()

    def covers(self, finding: Finding, now: float) -> bool:
        if self.namespaces and finding.namespace not in self.namespaces:
            return False
        if self.start is not None and now < self.start:
            return False
        if self.end is not None and now >= self.end:
            return False
        local = datetime.fromtimestamp(now, self.tz)
        minute = local.hour * 60 + local.minute
        day = local.weekday()
        if self.daily_start is not None and self.daily_end is not None:
            if self.daily_start <= self.daily_end:
                if not self.daily_start <= minute < self.daily_end:
                    return False
            elif minute >= self.daily_start:
                pass  # the evening part of an overnight range belongs to today
            elif minute < self.daily_end:
                day = (day - 1) % 7  # the morning part belongs to the day it started
            else:
                return False
        return not self.weekdays or day in self.weekdays


def muted(windows: tuple[MuteWindow, ...], finding: Finding, now: float) -> bool:
    return any(w.covers(finding, now) for w in windows)
