"""One price table: top-level ``prices``, shared with Slack; ``slack.prices`` still read."""

from __future__ import annotations

import pytest

from guardian.app.settings.config_file import parse_settings
from guardian_common.errors import ConfigError

BASE = "prometheus: {url: 'http://p:9090'}\nrule_files: [r.yaml]\n"
SLACK = "slack: {routing: {default_channel: C1}%s}\n"


def test_top_level_prices_are_the_table_and_slack_shows_the_same() -> None:
    text = BASE + "prices: {per_model: {A100: 2.5}, default: 1.0}\n" + SLACK % ""

    settings = parse_settings(text, "g.yaml")

    assert settings.prices.table().price("NVIDIA A100-SXM4-80GB") == 2.5
    assert settings.slack is not None
    assert settings.slack.finding_rules().prices == settings.prices.table()


def test_slack_prices_alone_are_still_the_table() -> None:
    settings = parse_settings(BASE + SLACK % ", prices: {default: 3.0}", "g.yaml")

    assert settings.prices.table().price("T4") == 3.0


def test_prices_set_twice_is_an_error_naming_the_file() -> None:
    text = BASE + "prices: {default: 1.0}\n" + SLACK % ", prices: {default: 3.0}"

    with pytest.raises(ConfigError, match=r"g\.yaml.*prices are set twice"):
        parse_settings(text, "g.yaml")


def test_no_prices_means_no_cost() -> None:
    assert parse_settings(BASE, "g.yaml").prices.table().price("A100") is None
