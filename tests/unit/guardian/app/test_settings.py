"""Settings: one YAML file, GUARDIAN_* overrides, errors with file, line and field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian.app.settings.config_file import load_settings, parse_settings
from guardian_common.errors import ConfigError, ConfigErrors

MINIMAL = """\
prometheus:
  url: http://prom:9090
rule_files: [rules/*.yaml]
"""


def test_minimal_config_has_defaults_and_resolves_paths(tmp_path: Path) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text(MINIMAL + "state_path: state/guardian.db\n")

    settings = load_settings(config, {})

    assert settings.prometheus.url == "http://prom:9090"
    assert settings.prometheus.timeout == 30.0
    assert settings.prometheus.thanos is False
    assert settings.evaluation_interval == 60.0
    assert settings.rule_files == [str(tmp_path / "rules/*.yaml")]
    assert settings.state_path == str(tmp_path / "state/guardian.db")
    assert settings.restore.for_grace_period == 600.0


def test_full_config() -> None:
    text = """\
prometheus:
  url: https://thanos-query:9090
  timeout: 1m30s
  thanos: true
  bearer_token_file: /var/run/secrets/token
  tls: {ca_file: /etc/ca.pem, cert_file: /etc/c.pem, key_file: /etc/k.pem}
rule_files: [/rules/a.yaml]
evaluation_interval: 30s
external_labels: {cluster: prod}
external_url: https://guardian.example
listen_address: 0.0.0.0:9469
remote_write:
  url: http://receive:19291/api/v1/receive
  basic_auth: {username: u, password_file: /etc/pw}
"""
    settings = parse_settings(text, "/etc/guardian/config.yaml")

    assert settings.prometheus.timeout == 90.0
    assert settings.prometheus.thanos
    assert settings.prometheus.tls.cert_file == "/etc/c.pem"
    assert settings.evaluation_interval == 30.0
    assert settings.external_labels == {"cluster": "prod"}
    assert settings.listen_host_port == ("0.0.0.0", 9469)
    assert settings.remote_write is not None
    assert settings.remote_write.basic_auth is not None
    assert settings.remote_write.basic_auth.password_file == "/etc/pw"  # noqa: S105


def test_env_overrides_nested_fields_with_yaml_values() -> None:
    env = {
        "GUARDIAN_PROMETHEUS__URL": "http://other:9090",
        "GUARDIAN_PROMETHEUS__THANOS": "true",
        "GUARDIAN_EXTERNAL_LABELS": "{cluster: dev}",
        "GUARDIAN_CONFIG": "/ignored/by/settings.yaml",
        "PATH": "/usr/bin",
    }

    settings = parse_settings(MINIMAL, "/c.yaml", env)

    assert settings.prometheus.url == "http://other:9090"
    assert settings.prometheus.thanos is True
    assert settings.external_labels == {"cluster": "dev"}


@pytest.mark.parametrize(
    ("text", "line", "field", "reason"),
    [
        (MINIMAL + "evaluation_intervall: 1m\n", 4, "evaluation_intervall", "Extra inputs"),
        (MINIMAL + "evaluation_interval: 1.5m\n", 4, "evaluation_interval", "Value error"),
        (
            "prometheus:\n  url: http://p\n  timeout: 5\n  tlss: {}\nrule_files: [a]\n",
            4,
            "prometheus.tlss",
            "Extra inputs",
        ),
        ("prometheus:\n  url: prom:9090\nrule_files: [a]\n", 2, "prometheus.url", "Value error"),
        ("prometheus:\n  url: http://p\nrule_files: []\n", 3, "rule_files", "List should"),
        ("rule_files: [a]\n", 1, "prometheus", "Field required"),
        (MINIMAL + "listen_address: nope\n", 4, "listen_address", "must be HOST:PORT"),
        (MINIMAL + "external_labels: {a-b: x}\n", 4, "external_labels", "invalid external"),
        (MINIMAL + "external_labels: {a: [1]}\n", 4, "external_labels.a", "Input should"),
    ],
)
def test_errors_name_file_line_and_field(text: str, line: int, field: str, reason: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")

    error = info.value.errors[0]
    assert (error.path, error.line, error.field) == ("conf.yaml", line, field)
    assert reason in error.reason


@pytest.mark.parametrize("value", ["90", "'90'", "1m30s", "90s", "90.0"])
def test_durations_in_the_file_and_in_the_environment(value: str) -> None:
    from_file = parse_settings(MINIMAL + f"evaluation_interval: {value}\n", "c.yaml")
    from_env = parse_settings(MINIMAL, "c.yaml", {"GUARDIAN_EVALUATION_INTERVAL": value})
    assert from_file.evaluation_interval == from_env.evaluation_interval == 90.0


@pytest.mark.parametrize("value", ["0", "0s", "-1", "true"])
def test_settings_durations_must_be_positive(value: str) -> None:
    text = MINIMAL + f"restore: {{for_grace_period: {value}}}\n"
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "c.yaml")
    assert info.value.errors[0].field == "restore.for_grace_period"


def test_env_errors_name_the_variable() -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(MINIMAL, "c.yaml", {"GUARDIAN_PROMETHEUS__TIMEOUT": "soon"})
    assert info.value.errors[0].path == "env GUARDIAN_PROMETHEUS__TIMEOUT"

    with pytest.raises(ConfigError, match="unknown setting 'prometheos'"):
        parse_settings(MINIMAL, "c.yaml", {"GUARDIAN_PROMETHEOS__URL": "x"})


def test_unreadable_file_and_unmatched_glob(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read config"):
        load_settings(tmp_path / "missing.yaml", {})

    config = tmp_path / "c.yaml"
    config.write_text(MINIMAL)
    settings = load_settings(config, {})
    with pytest.raises(ConfigError, match="no rule file matches"):
        settings.expanded_rule_files()
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "b.yaml").write_text("")
    (tmp_path / "rules" / "a.yaml").write_text("")
    assert settings.expanded_rule_files() == [
        str(tmp_path / "rules/a.yaml"),
        str(tmp_path / "rules/b.yaml"),
    ]


LEASE = MINIMAL + "remediation:\n  leader_election: {{{}}}\n"


@pytest.mark.parametrize(
    ("timing", "reason"),
    [
        ("lease_duration: 5s, renew_deadline: 10s", "lease_duration (5s) must be longer than"),
        ("lease_duration: 10s, renew_deadline: 10s", "must be longer than renew_deadline (10s)"),
        ("renew_deadline: 2400ms, retry_period: 2s", "renew_deadline (2s400ms) must be longer"),
        ("renew_deadline: 2s, retry_period: 2s", "than 1.2 x retry_period (2s)"),
        ("lease_duration: 2500ms, renew_deadline: 2s, retry_period: 1s", "whole seconds"),
    ],
)
def test_lease_timing_is_what_client_go_requires(timing: str, reason: str) -> None:
    # Otherwise two replicas act at once: measured ~2 s of two leaders with 5s/10s.
    with pytest.raises(ConfigErrors) as info:
        parse_settings(LEASE.format(timing), "c.yaml")
    (error,) = info.value.errors
    assert (error.line, error.field) == (5, "remediation.leader_election")
    assert reason in error.reason


@pytest.mark.parametrize(
    ("timing", "field", "reason"),
    [
        ("lease_duration: 100y", "lease_duration", "must be at most 1d (the Lease holds"),
        ("lease_duration: 2147483648s", "lease_duration", "must be at most 1d"),
        ("lease_duration: 86401s", "lease_duration", "got 1d1s"),
        ("retry_period: 1ms", "retry_period", "must be at least 1s (every retry writes"),
        ("retry_period: 999ms", "retry_period", "got 999ms"),
    ],
)
def test_lease_timing_is_what_the_api_server_accepts(timing: str, field: str, reason: str) -> None:
    """A Lease holds int32 seconds (beyond them every write is refused and nobody leads),
    and every retry is a write: each bound is one line naming the file, line and field."""
    with pytest.raises(ConfigErrors) as info:
        parse_settings(LEASE.format(timing), "c.yaml")
    (error,) = info.value.errors
    assert (error.path, error.line, error.field) == (
        "c.yaml",
        5,
        f"remediation.leader_election.{field}",
    )
    assert reason in error.reason


def test_the_longest_lease_is_accepted() -> None:
    timing = "lease_duration: 1d, renew_deadline: 23h, retry_period: 1s"
    settings = parse_settings(LEASE.format(timing), "c.yaml")
    assert settings.remediation.leader_election.lease_duration == 86_400.0


@pytest.mark.parametrize(
    "timing",
    ["", "lease_duration: 15s, renew_deadline: 10s, retry_period: 2s", "renew_deadline: 2401ms"],
)
def test_valid_lease_timing(timing: str) -> None:
    settings = parse_settings(LEASE.format(timing), "c.yaml")
    assert settings.remediation.leader_election.lease_duration == 15.0


@pytest.mark.parametrize(
    ("section", "field", "reason"),
    [
        ("remediation: {max_actions_per_cycle: '3'}", "max_actions_per_cycle", "not the string"),
        ("remediation: {max_actions_per_cycle: true}", "max_actions_per_cycle", "a boolean"),
        ("remediation: {dry_run: 'no'}", "dry_run", "must be true or false"),
        ("remediation: {enabled: 1}", "enabled", "valid boolean"),
        ("prometheus: {url: 'http://p', thanos: 'yes'}", "thanos", "must be true or false"),
    ],
)
def test_wrong_types_are_refused_not_coerced(section: str, field: str, reason: str) -> None:
    prometheus = "" if section.startswith("prometheus") else "prometheus: {url: 'http://p'}\n"
    text = f"{prometheus}rule_files: [a]\n{section}\n"
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "c.yaml")
    (error,) = info.value.errors
    assert error.field is not None
    assert error.field.endswith(field)
    assert reason in error.reason


@pytest.mark.parametrize("value", ["99999999999999999y", "101y", "1e400"])
def test_overlong_durations_are_refused_at_load(value: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(MINIMAL + f"evaluation_interval: {value}\n", "c.yaml")
    assert info.value.errors[0].field == "evaluation_interval"


def test_kubernetes_service_variables_are_not_overrides() -> None:
    # A Service named guardian (and one named guardian-exporter) in the namespace.
    env = {
        "GUARDIAN_SERVICE_HOST": "10.0.0.11",
        "GUARDIAN_SERVICE_PORT": "9469",
        "GUARDIAN_SERVICE_PORT_HTTP": "9469",
        "GUARDIAN_PORT": "tcp://10.0.0.11:9469",
        "GUARDIAN_PORT_9469_TCP": "tcp://10.0.0.11:9469",
        "GUARDIAN_PORT_9469_TCP_PROTO": "tcp",
        "GUARDIAN_PORT_9469_TCP_PORT": "9469",
        "GUARDIAN_PORT_9469_TCP_ADDR": "10.0.0.11",
        "GUARDIAN_EXPORTER_SERVICE_HOST": "10.0.0.12",
        "GUARDIAN_EXPORTER_PORT": "tcp://10.0.0.12:9400",
        "GUARDIAN_EVALUATION_INTERVAL": "30s",  # a real override still applies
    }
    settings = parse_settings(MINIMAL, "c.yaml", env)
    assert settings.evaluation_interval == 30.0
    with pytest.raises(ConfigError, match="unknown setting 'port'"):
        parse_settings(MINIMAL, "c.yaml", {"GUARDIAN_PORT": "9469"})


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.write_bytes(b"prometheus:\n  url: caf\xe9\n"), "2: not UTF-8 text"),
        (lambda p: p.write_text("a: " + "[" * 3000 + "]" * 3000), "1: invalid YAML"),
    ],
)
def test_unreadable_configs_are_one_line_errors(tmp_path: Path, make: object, reason: str) -> None:
    path = tmp_path / "c.yaml"
    assert callable(make)
    make(path)
    with pytest.raises(ConfigError) as info:
        load_settings(path, {})
    separator = ":" if reason[0].isdigit() else ": "
    assert str(info.value).startswith(f"{path}{separator}{reason}")
