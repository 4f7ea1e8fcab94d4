"""The real receivers ``guardian alertmanager-config`` can fill in: a Slack channel, a
PagerDuty service and a webhook, each with its secret in a file that Alertmanager reads
at send time, so no secret is ever written into the generated configuration.

What Alertmanager 0.25 accepts (``config/notifiers.go``):

- Slack: ``slack_configs[].api_url_file`` (the incoming webhook URL, a secret);
- PagerDuty: ``pagerduty_configs[].routing_key_file`` (Events API v2);
- webhook: 0.25 has no ``webhook_configs[].url_file`` (later versions do; 0.25 rejects
  the field), so the URL is written as is and the secret goes in a bearer token read from
  a file: ``http_config.authorization.credentials_file``.

Routing (see docs/alertmanager.md): Slack and the webhook get every alert, through every
generated receiver; PagerDuty pages only on the classes and severities ``page_on``
selects (default: every critical severity the rules have).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from guardian_common.errors import ConfigError

# The severities the PagerDuty Events API v2 takes; any other is left to its default.
PAGERDUTY_SEVERITIES = ("critical", "error", "warning", "info")
DEFAULT_PAGE_SEVERITY = "critical"


@dataclass(frozen=True)
class Receivers:
    """The receiver flags as given (``None``: not given); :func:`check_receivers` checks
    them against each other and the rules' classes."""

    slack_channel: str | None = None
    slack_api_url_file: str | None = None
    pagerduty_routing_key_file: str | None = None
    page_on: tuple[str, ...] = ()
    webhook_url: str | None = None
    webhook_credentials_file: str | None = None

    def any(self) -> bool:
        return bool(
            self.slack_channel
            or self.slack_api_url_file
            or self.pagerduty_routing_key_file
            or self.page_on
            or self.webhook_url
            or self.webhook_credentials_file
        )


@dataclass(frozen=True)
class Selector:
    """``CLASS`` (every severity of it, its fallback receiver included) or
    ``CLASS/SEVERITY``."""

    cls: str
    severity: str = ""

    def text(self) -> str:
        return f"{self.cls}/{self.severity}" if self.severity else self.cls

    def selects(self, cls: str, severity: str) -> bool:
        return cls == self.cls and (not self.severity or severity == self.severity)


def _absolute_file(value: str | None, flag: str) -> None:
    if value is None:
        return
    if not value.startswith("/") or any(c in value for c in "\n\r\t"):
        raise ConfigError(
            f"give an absolute path, as Alertmanager sees it (got {value!r})", field=flag
        )


def _together(first: tuple[str, str | None], second: tuple[str, str | None]) -> None:
    (first_flag, first_value), (second_flag, second_value) = first, second
    if first_value is not None and second_value is None:
        raise ConfigError(f"needs {second_flag} too", field=first_flag)
    if second_value is not None and first_value is None:
        raise ConfigError(f"needs {first_flag} too", field=second_flag)


def _check_webhook_url(url: str) -> None:
    # The URL is written into the configuration: never echo it (it may hold a token).
    flag = "--webhook-url"
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigError("not a URL", field=flag) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("give an http:// or https:// URL with a host", field=flag)
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            "no credentials in the URL: it is written into the configuration; "
            "put a token in --webhook-credentials-file",
            field=flag,
        )


def _check_slack(receivers: Receivers) -> None:
    _together(
        ("--slack-channel", receivers.slack_channel),
        ("--slack-api-url-file", receivers.slack_api_url_file),
    )
    channel = receivers.slack_channel
    if channel is not None and (not channel.strip() or any(c.isspace() for c in channel)):
        raise ConfigError(
            f"give a channel name or ID without spaces (got {channel!r})", field="--slack-channel"
        )
    _absolute_file(receivers.slack_api_url_file, "--slack-api-url-file")


def parse_selector(text: str, classes: Mapping[str, Sequence[str]]) -> Selector:
    """``CLASS`` or ``CLASS/SEVERITY``, naming a class (and severity) the rules have."""
    flag = "--page-on"
    cls, _, severity = text.partition("/")
    if cls not in classes:
        found = ", ".join(classes) or "none"
        raise ConfigError(
            f"no rule has guardian_class {cls!r} (the rules have: {found})", field=flag
        )
    if "/" in text and severity not in classes[cls]:
        found = ", ".join(classes[cls]) or "none"
        raise ConfigError(
            f"no {cls} rule has severity {severity!r} (they have: {found})", field=flag
        )
    return Selector(cls, severity)


def page_selectors(
    receivers: Receivers, classes: Mapping[str, Sequence[str]]
) -> tuple[Selector, ...]:
    """What PagerDuty pages on: ``page_on``, or every class's critical severity."""
    if receivers.pagerduty_routing_key_file is None:
        return ()
    if receivers.page_on:
        return tuple(parse_selector(text, classes) for text in receivers.page_on)
    chosen = tuple(
        Selector(cls, DEFAULT_PAGE_SEVERITY)
        for cls, severities in classes.items()
        if DEFAULT_PAGE_SEVERITY in severities
    )
    if not chosen:
        raise ConfigError(
            "no rule has severity 'critical', the default to page on: "
            "choose with --page-on CLASS[/SEVERITY]",
            field="--pagerduty-routing-key-file",
        )
    return chosen


def check_receivers(receivers: Receivers, classes: Mapping[str, Sequence[str]]) -> None:
    """ConfigError (naming the flag, on one line) for a flag missing its partner, a path
    that is not absolute, a bad URL or channel, or a ``--page-on`` the rules cannot meet."""
    _check_slack(receivers)
    _absolute_file(receivers.pagerduty_routing_key_file, "--pagerduty-routing-key-file")
    if receivers.page_on and receivers.pagerduty_routing_key_file is None:
        raise ConfigError("needs --pagerduty-routing-key-file too", field="--page-on")
    page_selectors(receivers, classes)
    if receivers.webhook_credentials_file is not None and receivers.webhook_url is None:
        raise ConfigError("needs --webhook-url too", field="--webhook-credentials-file")
    if receivers.webhook_url is not None:
        _check_webhook_url(receivers.webhook_url)
    _absolute_file(receivers.webhook_credentials_file, "--webhook-credentials-file")


def _pagerduty(receivers: Receivers, severity: str) -> dict[str, Any]:
    config: dict[str, Any] = {"routing_key_file": receivers.pagerduty_routing_key_file}
    if severity in PAGERDUTY_SEVERITIES:
        config["severity"] = severity
    config["send_resolved"] = True
    return config


def _webhook(receivers: Receivers) -> dict[str, Any]:
    config: dict[str, Any] = {"url": receivers.webhook_url, "send_resolved": True}
    if receivers.webhook_credentials_file is not None:
        config["http_config"] = {
            "authorization": {"credentials_file": receivers.webhook_credentials_file}
        }
    return config


def integrations(
    receivers: Receivers, pages: Sequence[Selector], cls: str, severity: str
) -> dict[str, Any]:
    """The ``*_configs`` of the generated receiver for ``cls`` and ``severity`` (both
    empty for the root receiver, ``severity`` empty for a class's fallback): Slack and
    the webhook always, PagerDuty where a selector of ``pages`` selects it."""
    out: dict[str, Any] = {}
    if receivers.slack_channel is not None:
        out["slack_configs"] = [
            {
                "channel": receivers.slack_channel,
                "api_url_file": receivers.slack_api_url_file,
                "send_resolved": True,
            }
        ]
    if cls and any(page.selects(cls, severity) for page in pages):
        out["pagerduty_configs"] = [_pagerduty(receivers, severity)]
    if receivers.webhook_url is not None:
        out["webhook_configs"] = [_webhook(receivers)]
    return out


def summary(receivers: Receivers, pages: Sequence[Selector]) -> list[str]:
    """One line per receiver given, for the generated file's header (paths and the
    channel only: the webhook URL is left out, as it may carry a token)."""
    lines = []
    if receivers.slack_channel is not None:
        lines.append(f"Slack {receivers.slack_channel}: every alert")
    if receivers.pagerduty_routing_key_file is not None:
        lines.append("PagerDuty: " + ", ".join(page.text() for page in pages))
    if receivers.webhook_url is not None:
        lines.append("webhook: every alert")
    return lines
