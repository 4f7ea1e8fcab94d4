"""Load the bot token or webhook URL (from a mounted file or an environment variable) and
build the transport it opens.

Errors name the file or the variable, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from guardian.adapters.slack.transport import (
    Secret,
    Transport,
    WebApiTransport,
    WebhookTransport,
)
from guardian.app.settings.slack import SlackSettings
from guardian_common.errors import ConfigError
from guardian_common.files import FileReadError
from guardian_common.files import read_secret as read_secret_file


@dataclass(frozen=True)
class SecretKind:
    """One of Slack's secrets: what errors call it, and the setting that names its file."""

    what: str
    field: str


BOT_TOKEN = SecretKind("Slack bot token", "slack.token_file")
WEBHOOK_URL = SecretKind("Slack webhook URL", "slack.webhook_url_file")
APP_TOKEN = SecretKind("Slack app-level token", "slack.interactivity.app_token_file")
SIGNING_SECRET = SecretKind("Slack signing secret", "slack.interactivity.signing_secret_file")


def read_secret(
    kind: SecretKind, env_name: str, file: str | None, env: Mapping[str, str]
) -> Secret:
    """``file`` wins when set (a Kubernetes Secret mounted as a file rotates in place)."""
    what, field = kind.what, kind.field
    if file:
        try:  # bounded: a FIFO, a device or a huge file is refused, never read
            value = read_secret_file(file, f"the {what}")
        except FileReadError as exc:
            raise ConfigError(exc.reason, path=file, field=field) from None
        if not value:
            raise ConfigError(f"the {what} file is empty", path=file, field=field)
        return Secret(value)
    value = env.get(env_name, "").strip()
    if not value:
        raise ConfigError(
            f"no {what}: set the environment variable {env_name} or {field}",
            field=field,
        )
    return Secret(value)


def bot_token(settings: SlackSettings, env: Mapping[str, str]) -> Secret:
    """The bot token: the notifier and the buttons' listener both post with it."""
    return read_secret(BOT_TOKEN, settings.token_env, settings.token_file, env)


def build_transport(settings: SlackSettings, env: Mapping[str, str]) -> Transport:
    """The Web API (bot token) or incoming-webhook transport the settings ask for."""
    d = settings.delivery
    if settings.mode == "webhook":
        url = read_secret(WEBHOOK_URL, settings.webhook_url_env, settings.webhook_url_file, env)
        return WebhookTransport(
            url, timeout=d.request_timeout, rate_limit_retries=d.rate_limit_retries
        )
    return WebApiTransport(
        bot_token(settings, env),
        base_url=settings.api_url,
        timeout=d.request_timeout,
        rate_limit_retries=d.rate_limit_retries,
    )
