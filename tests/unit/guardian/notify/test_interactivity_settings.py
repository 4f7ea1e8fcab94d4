"""The ``slack.interactivity`` settings: IDs, not names; one-line errors with a line."""

from __future__ import annotations

import pytest

from guardian.app.settings.config_file import parse_settings
from guardian_common.errors import ConfigError

BASE = """\
prometheus: {url: "http://prom:9090"}
rule_files: [rules.yaml]
slack:
  routing: {default_channel: C0123}
  interactivity:
    enabled: true
    authorized:
"""


def test_ids_and_defaults() -> None:
    text = BASE + "      by_namespace: {ml: [U0ALICE, S0ONCALL]}\n      admins: [W0ADMIN]\n"
    slack = parse_settings(text, "guardian.yaml").slack
    assert slack is not None
    i = slack.interactivity
    assert (i.mode, i.reclaim_now, i.app_token_env) == ("socket", False, "SLACK_APP_TOKEN")
    access = i.authorized.access()
    assert access.by_namespace == {"ml": ("U0ALICE", "S0ONCALL")}
    assert access.admins == ("W0ADMIN",)
    assert access.owners_annotation


def test_a_name_instead_of_an_id_names_the_file_line_and_field() -> None:
    text = BASE + "      by_namespace: {ml: [alice]}\n"
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, "guardian.yaml")
    message = str(caught.value)
    assert "guardian.yaml:8" in message
    assert "slack.interactivity.authorized.by_namespace" in message
    assert "'alice' is not a Slack user" in message
    assert "\n" not in message


def test_http_mode_needs_host_and_port() -> None:
    text = BASE.replace("enabled: true", "enabled: true\n    mode: http\n    listen_address: x")
    with pytest.raises(ConfigError, match="listen_address must be host:port"):
        parse_settings(text + "      admins: []\n", "guardian.yaml")


def test_runbook_url_pattern_defaults_to_the_rule_files_base_and_checks_placeholders() -> None:
    base = BASE + "      admins: []\n"
    slack = parse_settings(base, "guardian.yaml").slack
    assert slack is not None
    assert slack.finding_rules().runbook_url_pattern == (
        "https://gpu-guardian.io/runbooks/{alertname_lower}"
    )
    bad = base.replace("slack:\n", "slack:\n  runbook_url_pattern: https://wiki/{group}\n")
    with pytest.raises(ConfigError, match=r"unknown placeholder\(s\) \['group'\]"):
        parse_settings(bad, "guardian.yaml")
    off = base.replace("slack:\n", "slack:\n  runbook_url_pattern: null\n")
    slack = parse_settings(off, "guardian.yaml").slack
    assert slack is not None
    assert slack.finding_rules().runbook_url_pattern is None
