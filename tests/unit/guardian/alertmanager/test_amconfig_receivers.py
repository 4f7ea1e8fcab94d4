"""`guardian alertmanager-config` with real receivers: which integrations each generated
receiver carries, the header, and one-line errors (exit 2) for flags it cannot use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.app.alertmanager.config_render import RenderRequest, render_alertmanager_config
from guardian.cli import main
from guardian.engine.alertmanager.amconfig import AmConfigOptions, alertmanager_config
from guardian.engine.alertmanager.receivers import Receivers
from guardian.model.rules import AlertingRule
from guardian_common.errors import ConfigError

ROOT = Path(__file__).resolve().parents[4]
PACK = sorted(str(p) for p in (ROOT / "rules/guardian").glob("*.yaml"))

RULES = [
    AlertingRule("GpuIdle", "x", labels={"guardian_class": "reclaimable", "severity": "warning"}),
    AlertingRule("Down", "x", labels={"guardian_class": "pipeline", "severity": "warning"}),
    AlertingRule("Behind", "x", labels={"guardian_class": "pipeline", "severity": "critical"}),
    AlertingRule("Advice", "x", labels={"guardian_class": "rightsize", "severity": "info"}),
]
SLACK = Receivers(slack_channel="#gpu", slack_api_url_file="/s/slack")
PAGER = Receivers(pagerduty_routing_key_file="/s/pd")
HOOK = Receivers(webhook_url="https://hooks.example.com/g", webhook_credentials_file="/s/tok")
ALL = Receivers(
    slack_channel="#gpu",
    slack_api_url_file="/s/slack",
    pagerduty_routing_key_file="/s/pd",
    webhook_url="https://hooks.example.com/g",
    webhook_credentials_file="/s/tok",
)


def _receivers(receivers: Receivers, rules: list[AlertingRule] = RULES) -> dict[str, Any]:
    config = alertmanager_config(rules, AmConfigOptions(receivers=receivers))
    return {r.pop("name"): r for r in config["receivers"]}


def test_without_flags_the_receivers_stay_empty() -> None:
    found = _receivers(Receivers())
    assert all(body == {} for body in found.values())
    assert len(found) == 1 + 3 + 4  # the root, three classes, four class/severity pairs


def test_slack_and_the_webhook_get_every_receiver_pagerduty_only_critical() -> None:
    found = _receivers(ALL)
    slack = {"channel": "#gpu", "api_url_file": "/s/slack", "send_resolved": True}
    hook = {
        "url": "https://hooks.example.com/g",
        "send_resolved": True,
        "http_config": {"authorization": {"credentials_file": "/s/tok"}},
    }
    for name, body in found.items():
        assert body["slack_configs"] == [slack], name
        assert body["webhook_configs"] == [hook], name
    paged = {name for name, body in found.items() if "pagerduty_configs" in body}
    assert paged == {"gpu-guardian-pipeline-critical"}
    assert found["gpu-guardian-pipeline-critical"]["pagerduty_configs"] == [
        {"routing_key_file": "/s/pd", "severity": "critical", "send_resolved": True}
    ]
    assert list(found["gpu-guardian-pipeline-critical"]) == [
        "slack_configs",
        "pagerduty_configs",
        "webhook_configs",
    ]


def test_the_webhook_without_a_token_file_has_no_http_config() -> None:
    found = _receivers(Receivers(webhook_url="http://hook.internal:8080/alerts"))
    assert found["gpu-guardian"] == {
        "webhook_configs": [{"url": "http://hook.internal:8080/alerts", "send_resolved": True}]
    }


def test_page_on_a_class_pages_its_fallback_and_every_severity() -> None:
    receivers = Receivers(
        pagerduty_routing_key_file="/s/pd", page_on=("pipeline", "rightsize/info")
    )
    found = _receivers(receivers)
    paged = {name: body["pagerduty_configs"][0] for name, body in found.items() if body}
    assert set(paged) == {
        "gpu-guardian-pipeline",
        "gpu-guardian-pipeline-critical",
        "gpu-guardian-pipeline-warning",
        "gpu-guardian-rightsize-info",
    }
    assert "severity" not in paged["gpu-guardian-pipeline"]  # PagerDuty's default: error
    assert paged["gpu-guardian-pipeline-warning"]["severity"] == "warning"
    assert paged["gpu-guardian-rightsize-info"]["severity"] == "info"
    assert found["gpu-guardian"] == {}  # the root (unclassified alerts) never pages


def test_receivers_keep_the_routes_and_inhibit_rules() -> None:
    plain = alertmanager_config(RULES, AmConfigOptions())
    full = alertmanager_config(RULES, AmConfigOptions(receivers=ALL))
    assert full["route"] == plain["route"]
    assert full["inhibit_rules"] == plain["inhibit_rules"]
    assert [r["name"] for r in full["receivers"]] == [r["name"] for r in plain["receivers"]]


def test_the_shipped_packs_page_their_critical_pipeline_alerts_by_default() -> None:
    for pack in ("guardian", "dcgm"):
        files = sorted(str(p) for p in (ROOT / "rules" / pack).glob("*.yaml"))
        text = render_alertmanager_config(RenderRequest(files=files, receivers=PAGER))
        doc = yaml.safe_load(text)
        paged = [r["name"] for r in doc["receivers"] if "pagerduty_configs" in r]
        assert paged == ["gpu-guardian-pipeline-critical"], pack
        assert "#   PagerDuty: pipeline/critical\n" in text
        assert "#   the other receivers are empty: fill them in\n" in text


def test_the_header_names_the_receivers_but_never_the_webhook_url() -> None:
    text = render_alertmanager_config(RenderRequest(files=PACK, receivers=ALL))
    header = text[: text.index("route:")]
    assert "#   Slack #gpu: every alert\n" in header
    assert "#   PagerDuty: pipeline/critical\n" in header
    assert "#   webhook: every alert\n" in header
    assert "hooks.example.com" not in header
    assert "empty" not in header


def test_slack_only_with_a_prefix() -> None:
    text = render_alertmanager_config(
        RenderRequest(files=PACK, receiver_prefix="team-gpu", receivers=SLACK)
    )
    doc = yaml.safe_load(text)
    assert doc["receivers"][0]["name"] == "team-gpu"
    assert all(list(r) == ["name", "slack_configs"] for r in doc["receivers"])


def test_the_resource_format_refuses_receiver_flags() -> None:
    with pytest.raises(ConfigError, match=r"--format alertmanagerconfig: .*Secret references"):
        render_alertmanager_config(
            RenderRequest(files=PACK, format="alertmanagerconfig", receivers=HOOK)
        )


def test_without_a_critical_rule_pagerduty_needs_page_on() -> None:
    rules = [r for r in RULES if r.labels["severity"] != "critical"]
    with pytest.raises(ConfigError, match=r"--pagerduty-routing-key-file: .*--page-on"):
        alertmanager_config(rules, AmConfigOptions(receivers=PAGER))


SLACK_FLAGS = ["--slack-channel", "#gpu", "--slack-api-url-file", "/s/slack"]


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--slack-channel", "#gpu"], "--slack-channel: needs --slack-api-url-file too"),
        (["--slack-api-url-file", "/s"], "--slack-api-url-file: needs --slack-channel too"),
        (
            ["--slack-channel", "", "--slack-api-url-file", "/s"],
            "--slack-channel: give a channel name or ID without spaces (got '')",
        ),
        (
            ["--slack-channel", "#gpu", "--slack-api-url-file", "slack-url"],
            (
                "--slack-api-url-file: give an absolute path, as Alertmanager sees it "
                "(got 'slack-url')"
            ),
        ),
        (
            ["--pagerduty-routing-key-file", ""],
            (
                "--pagerduty-routing-key-file: give an absolute path, as Alertmanager sees it "
                "(got '')"
            ),
        ),
        (["--page-on", "pipeline"], "--page-on: needs --pagerduty-routing-key-file too"),
        (
            ["--pagerduty-routing-key-file", "/s/pd", "--page-on", "waste"],
            (
                "--page-on: no rule has guardian_class 'waste' (the rules have: coverage, "
                "pipeline, reclaimable, rightsize, violation)"
            ),
        ),
        (
            ["--pagerduty-routing-key-file", "/s/pd", "--page-on", "pipeline/page"],
            "--page-on: no pipeline rule has severity 'page' (they have: critical, warning)",
        ),
        (
            ["--webhook-credentials-file", "/s/tok"],
            "--webhook-credentials-file: needs --webhook-url too",
        ),
        (
            ["--webhook-url", "hooks.example.com/g"],
            "--webhook-url: give an http:// or https:// URL with a host",
        ),
        (
            ["--webhook-url", "https://bot:hunter2@hooks.example.com/g"],
            (
                "--webhook-url: no credentials in the URL: it is written into the configuration; "
                "put a token in --webhook-credentials-file"
            ),
        ),
        (
            ["--webhook-url", "https://hooks.example.com/g", "--webhook-credentials-file", "t"],
            (
                "--webhook-credentials-file: give an absolute path, as Alertmanager sees it "
                "(got 't')"
            ),
        ),
        (
            ["--format", "alertmanagerconfig", *SLACK_FLAGS],
            (
                "--format alertmanagerconfig: the receiver flags write file paths for "
                "alertmanager.yml; an AlertmanagerConfig takes Secret references: fill in its "
                "receivers"
            ),
        ),
    ],
)
def test_bad_receiver_flags_exit_2_with_one_line(
    flags: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alertmanager-config", *flags, *PACK]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"guardian alertmanager-config: {line}"]
    assert "hunter2" not in err


def test_the_cli_passes_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "alertmanager-config",
        *SLACK_FLAGS,
        "--pagerduty-routing-key-file",
        "/s/pd",
        "--page-on",
        "pipeline/warning",
        "--page-on",
        "violation",
        "--webhook-url",
        "https://hooks.example.com/g",
        "--webhook-credentials-file",
        "/s/tok",
        *PACK,
    ]
    assert main(argv) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    by_name = {r["name"]: r for r in doc["receivers"]}
    paged = sorted(n for n, r in by_name.items() if "pagerduty_configs" in r)
    assert paged == [
        "gpu-guardian-pipeline-warning",
        "gpu-guardian-violation",
        "gpu-guardian-violation-warning",
    ]
    assert all("slack_configs" in r and "webhook_configs" in r for r in by_name.values())
