"""The Slack notifier service: intake, outbox worker, settings and metrics."""

from guardian.app.notify.service import RemediationFeed, SlackNotifier
from guardian.app.settings.slack import SlackSettings

__all__ = ["RemediationFeed", "SlackNotifier", "SlackSettings"]
