"""Fixtures for tests of the fake Slack. Test modules import them explicitly.

Import the ``*_fixture`` functions; tests ask for ``fake_slack`` and
``slack_client``. The real ``slack_sdk`` clients talk to the fake over loopback, exactly as the
Slack notifier will.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from testbed.slackapi import Channel, FakeSlack

TOKEN = "xoxb-test"  # noqa: S105 - the fake workspace's bot token
ALERTS = Channel("C0123", "gpu-alerts")
TEAM = Channel("C0456", "ml-team")
NOT_JOINED = Channel("C0999", "finance", is_member=False)


@pytest.fixture(name="fake_slack")
def fake_slack_fixture() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS, TEAM, NOT_JOINED]) as fake:
        yield fake


@pytest.fixture(name="slack_client")
def slack_client_fixture(fake_slack: FakeSlack) -> WebClient:
    """A WebClient with slack_sdk's defaults (retries only connection errors)."""
    return WebClient(token=TOKEN, base_url=fake_slack.api_base_url, timeout=5)
