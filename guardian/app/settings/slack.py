"""The ``slack:`` section of the controller's settings (validated with extra="forbid").

The secrets are never in the file: ``token_file`` (a mounted Secret) or the variable
named by ``token_env``; likewise the webhook URL in webhook mode.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from guardian.app.settings.pictures import PictureSettings
from guardian.app.settings.prices import PriceSettings
from guardian.engine.notify.click_plan import Access
from guardian.engine.notify.findings import FindingRules
from guardian.engine.notify.routing import WEEKDAYS, MuteWindow, Routes
from guardian.model.runbooks import RUNBOOK_URL_PATTERN
from guardian_common.config_types import Bool, ConfigPath, Duration, Int, StrictModel
from guardian_common.redact import redact_url

Meaning = Literal["peak_utilization", "peak_memory_ratio", "none"]
_MEANINGS: dict[str, Meaning] = {
    "GpuIdle": "peak_utilization",
    "GpuMemoryUnderutilized": "peak_memory_ratio",
}
_RUNBOOK_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_SLACK_ID = re.compile(r"^[UWS][A-Z0-9]{2,}$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")


class RoutingSettings(StrictModel):
    """Which channel a message goes to: the first match of policy, namespace, gpu_group."""

    default_channel: str = Field(min_length=1)
    """Channel ID (not a #name) for everything no rule below matches."""
    by_policy: dict[str, str] = Field(default_factory=dict)
    """ReclaimPolicy name -> channel ID."""
    by_namespace: dict[str, str] = Field(default_factory=dict)
    """Namespace -> channel ID."""
    by_gpu_group: dict[str, str] = Field(default_factory=dict)
    """``gpu_group`` label value -> channel ID."""


class MuteWindowSettings(StrictModel):
    """Absolute (``start``/``end``, RFC 3339 with a zone) and/or recurring (``weekdays``,
    ``daily_start``-``daily_end`` as HH:MM in ``timezone``)."""

    start: datetime | None = None
    """Start of an absolute window (RFC 3339 with a zone); unset: open-ended."""
    end: datetime | None = None
    """End of an absolute window; unset: open-ended."""
    weekdays: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = Field(
        default_factory=list
    )
    """Days the recurring window applies; empty: every day."""
    daily_start: str | None = None
    """HH:MM the recurring window starts, in ``timezone``."""
    daily_end: str | None = None
    """HH:MM it ends (24:00: midnight); set together with ``daily_start``."""
    timezone: str = "UTC"
    """IANA zone of the recurring window. UTC: the same for every reader of the config."""
    namespaces: list[str] = Field(default_factory=list)
    """Namespaces muted; empty: all."""

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


class GroupingSettings(StrictModel):
    enabled: Bool = True
    """Fold many new alerts of one rule and namespace into one message, so a node
    failure does not flood a channel."""
    min_alerts: Int = Field(default=5, ge=2)
    """New alerts of one rule and namespace in one cycle that make a group. 5: fewer
    still read well as separate messages."""


class DeliverySettings(StrictModel):
    post_interval: Duration = 1.1
    """Seconds between posts to one channel. 1.1s: Slack allows about one per second."""
    rate_limit_retries: Int = Field(default=1, ge=0, le=5)
    """Retries of a 429 inside one call (after its Retry-After); later ones wait in the
    queue, so one rate-limited channel cannot hold the others up."""
    backoff_initial: Duration = 1.0
    """Seconds before the first retry after a 5xx or connection error; doubles each time."""
    backoff_max: Duration = 300.0
    """Longest wait in seconds between retries, and the retry interval while the token is
    refused. 5m: an outage ends within minutes of Slack's without hammering it."""
    request_timeout: Duration = 30.0
    """Seconds one Slack API call may take (slack_sdk's own default)."""
    reconcile: Literal["history", "resend"] = "history"
    """"history": before re-posting a message that may have arrived, look for it with
    conversations.history/replies (needs channels:history, groups:history);
    "resend": re-post without looking (a crash in that window can duplicate it)."""
    retention: Duration = 14 * 86400.0
    """Seconds finished operations are kept, against replays. 14d: longer than any
    outage a queued message is meant to survive."""

    @model_validator(mode="after")
    def _order(self) -> DeliverySettings:
        if self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_max must be >= backoff_initial")
        return self


def _ids(values: list[str]) -> list[str]:
    for value in values:
        if not _SLACK_ID.match(value):
            raise ValueError(
                f"{value!r} is not a Slack user (U…, W…) or user-group (S…) ID; "
                "names change, IDs do not"
            )
    return values


class AccessSettings(StrictModel):
    """Who may press the buttons. Slack user IDs (``U…``/``W…``) or user-group IDs (``S…``)."""

    admins: list[str] = Field(default_factory=list)
    """May press every button on every episode."""
    by_namespace: dict[str, list[str]] = Field(default_factory=dict)
    """Namespace -> who may act on its workloads."""
    by_gpu_group: dict[str, list[str]] = Field(default_factory=dict)
    """``gpu_group`` label value -> who may act on workloads using that GPU group."""
    owners_annotation: Bool = True
    """Also whoever the namespace's ``gpu-guardian.io/owners`` annotation names (IDs,
    comma- or space-separated): teams manage their own owners."""

    @field_validator("admins")
    @classmethod
    def _admins(cls, values: list[str]) -> list[str]:
        return _ids(values)

    @field_validator("by_namespace", "by_gpu_group")
    @classmethod
    def _maps(cls, values: dict[str, list[str]]) -> dict[str, list[str]]:
        for ids in values.values():
            _ids(ids)
        return values

    def access(self) -> Access:
        return Access(
            admins=tuple(self.admins),
            by_namespace={k: tuple(v) for k, v in self.by_namespace.items()},
            by_gpu_group={k: tuple(v) for k, v in self.by_gpu_group.items()},
            owners_annotation=self.owners_annotation,
        )


class InteractivitySettings(StrictModel):
    """Buttons on episode messages (Keep 4h, Keep 24h, Exempt, Restore, Reclaim now)."""

    enabled: Bool = False
    """Show buttons and act on clicks. Needs the app-level token (socket) or the signing
    secret (http), and remediation (the buttons act through its executor)."""
    mode: Literal["socket", "http"] = "socket"
    """"socket": Slack's Socket Mode, an outbound websocket (no public endpoint);
    "http": Slack POSTs clicks to ``listen_address`` (needs ingress)."""
    app_token_env: str = "SLACK_APP_TOKEN"  # noqa: S105 - the variable's name
    """Variable holding the app-level token (``xapp-…``, scope connections:write)."""
    app_token_file: ConfigPath | None = None
    """File holding the app-level token; wins over ``app_token_env``."""
    signing_secret_env: str = "SLACK_SIGNING_SECRET"  # noqa: S105 - the variable's name
    """Variable holding the app's signing secret (http mode)."""
    signing_secret_file: ConfigPath | None = None
    """File holding the signing secret; wins over ``signing_secret_env``."""
    listen_address: str = "0.0.0.0:8090"
    """host:port of the http mode's own listener (not the metrics port)."""
    path: str = "/slack/interactivity"
    """The Request URL's path."""
    reclaim_now: Bool = False
    """Offer *Reclaim now* during an enforced grace period. Off: stopping a workload
    early is rarely what an on-call engineer should do from a phone."""
    authorized: AccessSettings = AccessSettings()
    """Who may press what."""

    @field_validator("listen_address")
    @classmethod
    def _address(cls, value: str) -> str:
        _host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"listen_address must be host:port, got {value!r}")
        return value


class SlackSettings(StrictModel):
    enabled: Bool = True
    """Post at all; off keeps the section (and its validation) without posting."""
    mode: Literal["bot", "webhook"] = "bot"
    """"bot": chat.postMessage with threads and updates; "webhook": an incoming webhook,
    which cannot update messages."""
    token_env: str = "SLACK_BOT_TOKEN"  # noqa: S105 - the variable's name, not a token
    """Variable holding the bot token when ``token_file`` is unset (Slack's usual name)."""
    token_file: ConfigPath | None = None
    """File holding the bot token (a mounted Secret); wins over ``token_env``."""
    webhook_url_env: str = "SLACK_WEBHOOK_URL"
    """Variable holding the webhook URL in webhook mode."""
    webhook_url_file: ConfigPath | None = None
    """File holding the webhook URL; wins over ``webhook_url_env``."""
    api_url: str = "https://slack.com/api/"
    """Slack Web API base URL; another one only for a fake Slack or a proxy."""
    routing: RoutingSettings
    """Where each message goes."""
    repeat_interval: Duration = 4 * 3600.0
    """Seconds between reminders for an episode that is still wasting GPUs. 4h: about
    twice a working day, often enough to act on, rare enough not to be muted."""
    grouping: GroupingSettings = GroupingSettings()
    """Folding many alerts into one message."""
    pictures: PictureSettings = PictureSettings()
    """The evidence as a picture in each episode's thread."""
    mute: list[MuteWindowSettings] = Field(default_factory=list)
    """Windows in which nothing is posted (maintenance, nights)."""
    prices: PriceSettings = PriceSettings()
    """GPU-hour prices for the cost shown in messages. Prefer the top-level ``prices``
    (shared with ``guardian report`` and ``simulate``); it is copied here when this is unset."""
    value_meaning: dict[str, Meaning] = Field(default_factory=lambda: dict(_MEANINGS))
    """Alert name -> what the alert's value is; the defaults match the shipped rules."""
    idle_windows: dict[str, Duration] = Field(
        default_factory=lambda: {"GpuIdle": 1800.0, "GpuMemoryUnderutilized": 3600.0}
    )
    """Alert name -> seconds its rule looks back over, for "idle for" when the alert has
    no ``idle_since``; the defaults match the shipped rules (30m, 1h)."""
    cluster_label: str = "cluster"
    """Alert label that names the cluster in messages (the usual external label)."""
    runbook_url_pattern: str | None = RUNBOOK_URL_PATTERN
    """Where a shipped alert's runbook link points (``{alertname_lower}``,
    ``{alertname}``): by default the base the shipped rule files use
    (``https://gpu-guardian.io/runbooks/{alertname_lower}``); give the same pattern as
    ``guardian rules render --runbook-url-pattern`` to move both; null: the alert's
    ``runbook_url`` as it is. Other alerts keep their own."""
    delivery: DeliverySettings = DeliverySettings()
    """Pacing, retries and retention of posts."""
    interactivity: InteractivitySettings = InteractivitySettings()
    """Buttons, and who may press them."""

    @field_validator("api_url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            shown = redact_url(url)
            raise ValueError(f"api_url must start with http:// or https://, got {shown!r}")
        return url if url.endswith("/") else url + "/"

    @field_validator("runbook_url_pattern")
    @classmethod
    def _runbooks(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        if not pattern.startswith(("http://", "https://")):
            raise ValueError(f"runbook_url_pattern must be an http(s) URL, got {pattern!r}")
        unknown = set(_RUNBOOK_PLACEHOLDER.findall(pattern)) - {"alertname", "alertname_lower"}
        if unknown:
            raise ValueError(
                f"unknown placeholder(s) {sorted(unknown)} in runbook_url_pattern; "
                "use {alertname} or {alertname_lower}"
            )
        return pattern

    def finding_rules(self) -> FindingRules:
        return FindingRules(
            runbook_url_pattern=self.runbook_url_pattern,
            prices=self.prices.table(),
            value_meaning=dict(self.value_meaning),
            idle_windows=dict(self.idle_windows),
            cluster_label=self.cluster_label,
        )

    def routes(self) -> Routes:
        r = self.routing
        return Routes(r.default_channel, r.by_policy, r.by_namespace, r.by_gpu_group)

    def mute_windows(self) -> tuple[MuteWindow, ...]:
        return tuple(m.to_window() for m in self.mute)
