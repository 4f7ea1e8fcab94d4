"""The ``slack:`` section of the controller's settings (validated with extra="forbid").

The secrets are never in the file: ``token_file`` (a mounted Secret) or the variable
named by ``token_env``; likewise the webhook URL in webhook mode.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from guardian.engine.notify.findings import FindingRules, PriceTable
from guardian.engine.notify.routing import WEEKDAYS, MuteWindow, Routes
from guardian_common.durations import parse_duration


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    return value


Meaning = Literal["peak_utilization", "peak_memory_ratio", "none"]
Seconds = Annotated[float, BeforeValidator(_duration), Field(gt=0)]
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoutingSettings(_Strict):
    default_channel: str = Field(min_length=1)
    by_policy: dict[str, str] = {}
    by_namespace: dict[str, str] = {}
    by_gpu_group: dict[str, str] = {}


class MuteWindowSettings(_Strict):
    """Absolute (``start``/``end``, RFC 3339 with a zone) and/or recurring (``weekdays``,
    ``daily_start``-``daily_end`` as HH:MM in ``timezone``)."""

    start: datetime | None = None
    end: datetime | None = None
    weekdays: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = []
    daily_start: str | None = None
    daily_end: str | None = None
    timezone: str = "UTC"
    namespaces: list[str] = []

    @field_validator("daily_start", "daily_end")
    @classmethod
    def _hhmm(cls, value: str | None) -> str | None:
        if value is not None and not _HHMM.match(value):
            raise ValueError(f"must be HH:MM (00:00-24:00), got {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}") from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("give a time zone (e.g. 2026-12-24T00:00:00Z)")
        return value

    @model_validator(mode="after")
    def _check(self) -> MuteWindowSettings:
        if (self.daily_start is None) != (self.daily_end is None):
            raise ValueError("set daily_start and daily_end together")
        if self.start and self.end and self.end <= self.start:
            raise ValueError("end must be after start")
        if not (self.start or self.end or self.weekdays or self.daily_start):
            raise ValueError("a mute window needs start/end, weekdays or daily_start/daily_end")
        return self

    def to_window(self) -> MuteWindow:
        def minutes(text: str | None) -> int | None:
            if text is None:
                return None
            hours, mins = text.split(":")
            return int(hours) * 60 + int(mins)

        return MuteWindow(
            tz=ZoneInfo(self.timezone),
            start=self.start.timestamp() if self.start else None,
            end=self.end.timestamp() if self.end else None,
            weekdays=frozenset(WEEKDAYS.index(d) for d in self.weekdays),
            daily_start=minutes(self.daily_start),
            daily_end=minutes(self.daily_end),
            namespaces=frozenset(self.namespaces),
        )


class GroupingSettings(_Strict):
    enabled: bool = True
    min_alerts: int = Field(default=5, ge=2)


class PriceSettings(_Strict):
    """Price per GPU-hour. ``per_model`` keys match exactly, else as a substring of the
    model name (longest wins); ``default`` prices unknown models (unset: no cost shown)."""

    currency: str = "$"
    default: float | None = Field(default=None, ge=0)
    per_model: dict[str, Annotated[float, Field(ge=0)]] = {}


class DeliverySettings(_Strict):
    post_interval: Seconds = 1.1  # per channel; Slack allows about one post per second
    rate_limit_retries: int = Field(default=1, ge=0, le=5)
    backoff_initial: Seconds = 1.0
    backoff_max: Seconds = 300.0
    request_timeout: Seconds = 30.0
    # "history": before re-posting a message that may have arrived, look for it with
    # conversations.history/replies (needs channels:history, groups:history);
    # "resend": re-post without looking (a crash in that window can duplicate it).
    reconcile: Literal["history", "resend"] = "history"
    retention: Seconds = 14 * 86400.0  # how long finished operations are kept

    @model_validator(mode="after")
    def _order(self) -> DeliverySettings:
        if self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_max must be >= backoff_initial")
        return self


class SlackSettings(_Strict):
    enabled: bool = True
    mode: Literal["bot", "webhook"] = "bot"
    token_env: str = "SLACK_BOT_TOKEN"  # noqa: S105 - the variable's name, not a token
    token_file: str | None = None
    webhook_url_env: str = "SLACK_WEBHOOK_URL"
    webhook_url_file: str | None = None
    api_url: str = "https://slack.com/api/"
    routing: RoutingSettings
    repeat_interval: Seconds = 4 * 3600.0
    grouping: GroupingSettings = GroupingSettings()
    mute: list[MuteWindowSettings] = []
    prices: PriceSettings = PriceSettings()
    value_meaning: dict[str, Meaning] = {
        "GpuIdle": "peak_utilization",
        "GpuMemoryUnderutilized": "peak_memory_ratio",
    }
    idle_windows: dict[str, Seconds] = {"GpuIdle": 1800.0, "GpuMemoryUnderutilized": 3600.0}
    cluster_label: str = "cluster"
    delivery: DeliverySettings = DeliverySettings()

    @field_validator("api_url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"api_url must start with http:// or https://, got {url!r}")
        return url if url.endswith("/") else url + "/"

    def finding_rules(self) -> FindingRules:
        return FindingRules(
            prices=PriceTable(
                dict(self.prices.per_model), self.prices.default, self.prices.currency
            ),
            value_meaning=dict(self.value_meaning),
            idle_windows=dict(self.idle_windows),
            cluster_label=self.cluster_label,
        )

    def routes(self) -> Routes:
        r = self.routing
        return Routes(r.default_channel, r.by_policy, r.by_namespace, r.by_gpu_group)

    def mute_windows(self) -> tuple[MuteWindow, ...]:
        return tuple(m.to_window() for m in self.mute)
