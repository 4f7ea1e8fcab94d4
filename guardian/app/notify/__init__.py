"""The Slack notifier service: intake, outbox worker, settings and metrics."""

from guardian.app.notify.service import NotifierLinks, RemediationFeed, SlackNotifier
from guardian.app.settings.slack import SlackSettings

__all__ = ["NotifierLinks", "RemediationFeed", "SlackNotifier", "SlackSettings"]
