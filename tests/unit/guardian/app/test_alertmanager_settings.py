"""The alertmanager: and alerts: sections: Prometheus's relabel checks, one-line errors
with file, line and field, exit status 2 from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardian.app.settings.config_file import parse_settings
from guardian.cli import main
from guardian.model.relabel_config import RelabelAction, RelabelConfig
from guardian_common.errors import ConfigErrors

MINIMAL = "prometheus:\n  url: http://p:9090\nrule_files: [a]\n"
AM = MINIMAL + "alertmanager:\n  alertmanagers: [{url: http://am:9093}]\n"


def test_defaults_are_prometheus_defaults() -> None:
    settings = parse_settings(AM, "/etc/guardian/conf.yaml")
    am = settings.alertmanager
    assert am is not None
    assert am.resend_delay == 60.0
    assert am.queue_capacity == 10_000
    assert am.alertmanagers[0].timeout == 10.0
    assert am.send is True
    assert settings.alerts.source == "engine"
    assert parse_settings(MINIMAL, "c.yaml").alertmanager is None


def test_client_options_and_relative_paths(tmp_path: Path) -> None:
    text = MINIMAL + (
        "alertmanager:\n"
        "  alertmanagers:\n"
        "    - url: https://am.example/prefix\n"
        "      bearer_token_file: token\n"
        "      tls: {ca_file: ca.pem}\n"
        "  alert_relabel_configs:\n"
        "    - {source_labels: [pod], regex: '(.*)-\\d+', target_label: workload}\n"
        "    - {action: LabelDrop, regex: 'pod_uid'}\n"
    )
    settings = parse_settings(text, str(tmp_path / "conf.yaml"))
    assert settings.alertmanager is not None
    endpoint = settings.alertmanager.alertmanagers[0]
    assert endpoint.bearer_token_file == str(tmp_path / "token")
    assert endpoint.tls.ca_file == str(tmp_path / "ca.pem")
    assert settings.alertmanager.relabel_configs() == (
        RelabelConfig(("pod",), regex="(.*)-\\d+", target_label="workload"),
        RelabelConfig(regex="pod_uid", action=RelabelAction.LABELDROP),
    )


RELABEL = AM + "  alert_relabel_configs:\n    - "


@pytest.mark.parametrize(
    ("item", "field", "reason"),
    [
        ("{action: hashmod, target_label: x}", "alert_relabel_configs[0]", "non-zero modulus"),
        ("{source_labels: [a]}", "alert_relabel_configs[0]", "requires 'target_label'"),
        (
            "{action: labeldrop, regex: a, source_labels: [b]}",
            "alert_relabel_configs[0]",
            "only 'regex'",
        ),
        (
            "{action: keepequal, target_label: a, regex: b}",
            "alert_relabel_configs[0]",
            "no other fields",
        ),
        (
            "{action: lowercase, target_label: a, replacement: b}",
            "alert_relabel_configs[0]",
            "can not be set",
        ),
        ("{target_label: 'a-b'}", "alert_relabel_configs[0]", "invalid 'target_label'"),
        (
            "{action: labelmap, replacement: 'a-$1'}",
            "alert_relabel_configs[0]",
            "invalid 'replacement'",
        ),
        ("{regex: '(', target_label: a}", "alert_relabel_configs[0].regex", "missing closing )"),
        ("{action: rewrite}", "alert_relabel_configs[0].action", "Input should be"),
        (
            "{source_labels: ['1a'], target_label: a}",
            "alert_relabel_configs[0].source_labels",
            "invalid label",
        ),
        ("{modulus: true}", "alert_relabel_configs[0].modulus", "boolean"),
    ],
)
def test_relabel_configs_are_checked_as_prometheus_does(item: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(RELABEL + item + "\n", "conf.yaml")
    error = info.value.errors[0]
    assert (error.path, error.line) == ("conf.yaml", 7)
    assert error.field == f"alertmanager.{field}"
    assert reason in error.reason


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (
            MINIMAL + "alertmanager:\n  alertmanagers: []\n",
            "alertmanager.alertmanagers",
            "at least 1",
        ),
        (
            MINIMAL + "alertmanager:\n  alertmanagers: [{url: am:9093}]\n",
            "alertmanager.alertmanagers[0].url",
            "http",
        ),
        (AM + "  queue_capacity: 0\n", "alertmanager.queue_capacity", "greater than or equal"),
        (AM + "  resend_delay: 0s\n", "alertmanager.resend_delay", "greater than"),
        (MINIMAL + "alerts: {source: thanos}\n", "alerts.source", "Input should be"),
    ],
)
def test_section_errors(text: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")
    error = info.value.errors[0]
    assert error.field == field
    assert reason in error.reason


def test_a_bad_section_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text(RELABEL + "{action: hashmod, target_label: x}\n", encoding="utf-8")
    assert main(["alertmanager-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"{config}:7: alertmanager.alert_relabel_configs[0]" in err[0]
