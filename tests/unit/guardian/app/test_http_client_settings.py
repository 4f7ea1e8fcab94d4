"""The prometheus: and remote_write: sections: validated once, turned into one client config.

The remote-write cases here were the client's own checks before the client took the shared
config; they still fail at startup and still name the field.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian.app.rules.build import build_engine, prometheus_access, remote_write_client
from guardian.app.rules.thread_fan_out import ThreadFanOut
from guardian.app.settings.config_file import load_settings, parse_settings
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig, TlsConfig
from guardian_common.errors import ConfigError, ConfigErrors

HEAD = "prometheus:\n  url: http://prom:9090\nrule_files: [r.yaml]\n"


def remote_write(body: str) -> str:
    return HEAD + "remote_write:\n  url: http://receive:19291/api/v1/receive\n" + body


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (HEAD + "remote_write: {url: 'ftp://x/api/v1/write'}\n", "remote_write.url"),
        (HEAD + "remote_write: {url: not a url}\n", "remote_write.url"),
        (HEAD + "remote_write: {url: 'http://'}\n", "remote_write.url"),
        (remote_write("  timeout: 0\n"), "remote_write.timeout"),
        (remote_write("  headers: {content-type: text/plain}\n"), "remote_write.headers"),
        (remote_write("  headers: {Authorization: Bearer x}\n"), "remote_write.headers"),
        (
            remote_write("  bearer_token_file: /t\n  basic_auth: {username: a, password: b}\n"),
            "remote_write.basic_auth",
        ),
        (remote_write("  tls: {cert_file: /c}\n"), "remote_write.tls"),
        (
            remote_write("  tls: {insecure_skip_verify: true}\n"),
            "remote_write.tls.insecure_skip_verify",
        ),
        (
            remote_write("  basic_auth: {username: a, password: b, password_file: /p}\n"),
            "remote_write.basic_auth",
        ),
    ],
)
def test_bad_remote_write_settings_name_the_field(text: str, field: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")
    error = info.value.errors[0]
    assert (error.path, error.field) == ("conf.yaml", field)


def test_prometheus_keeps_what_it_allowed_before() -> None:
    """A client certificate with its key inside, and any header, as before."""
    text = (
        "prometheus:\n  url: https://prom:9090\n  tls: {cert_file: /c.pem}\n"
        "  headers: {Authorization: Custom x}\nrule_files: [r.yaml]\n"
    )
    settings = parse_settings(text, "/etc/conf.yaml")
    assert settings.prometheus.client_config().tls.cert == "/c.pem"
    assert settings.prometheus.headers == {"Authorization": "Custom x"}


@pytest.mark.parametrize("value", ["0", "65", "two"])
def test_concurrent_queries_out_of_range_name_the_line_and_field(value: str) -> None:
    text = HEAD.replace(
        "  url: http://prom:9090\n", f"  url: http://prom:9090\n  concurrent_queries: {value}\n"
    )
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")
    error = info.value.errors[0]
    assert (error.path, error.line, error.field) == (
        "conf.yaml",
        3,
        "prometheus.concurrent_queries",
    )
    assert parse_settings(HEAD, "conf.yaml").prometheus.concurrent_queries == 4


def test_prometheus_refuses_two_kinds_of_auth_naming_the_field() -> None:
    text = HEAD.replace(
        "  url: http://prom:9090\n",
        "  url: http://prom:9090\n  bearer_token_file: /t\n  basic_auth: {username: u}\n",
    )
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")
    assert info.value.errors[0].field == "prometheus.basic_auth"


def test_one_client_config_for_both_with_paths_from_the_config_directory(tmp_path: Path) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text(
        "prometheus:\n"
        "  url: https://thanos:9090\n"
        "  timeout: 1m30s\n"
        "  thanos: true\n"
        "  method: POST\n"
        "  basic_auth: {username: u, password_file: secrets/pw}\n"
        "  tls: {ca_file: ca.pem, insecure_skip_verify: false}\n"
        "  headers: {X-Scope-OrgID: gpu}\n"
        "rule_files: [r.yaml]\n"
        "remote_write:\n"
        "  url: http://receive:19291/api/v1/receive\n"
        "  bearer_token_file: token\n"
        "  tls: {ca_file: /abs/ca.pem, cert_file: c.pem, key_file: k.pem}\n"
    )
    settings = load_settings(config, {})

    access = prometheus_access(settings)
    assert (access.thanos, access.method) == (True, "POST")
    assert access.http == HttpClientConfig(
        url="https://thanos:9090",
        timeout=90.0,
        headers={"X-Scope-OrgID": "gpu"},
        basic_auth=BasicAuthConfig("u", password_file=str(tmp_path / "secrets/pw")),
        tls=TlsConfig(ca_file=str(tmp_path / "ca.pem")),
    )
    assert settings.remote_write is not None
    assert settings.remote_write.client_config() == HttpClientConfig(
        url="http://receive:19291/api/v1/receive",
        timeout=10.0,
        bearer_token_file=str(tmp_path / "token"),
        tls=TlsConfig("/abs/ca.pem", str(tmp_path / "c.pem"), str(tmp_path / "k.pem")),
    )


def test_the_password_is_not_in_the_repr() -> None:
    text = HEAD.replace(
        "  url: http://prom:9090\n",
        "  url: http://p\n  basic_auth: {username: u, password: hunter2}\n",
    )
    settings = parse_settings(text, "conf.yaml")
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in repr(settings.prometheus.client_config())


@pytest.mark.parametrize("option", ["ca_file", "cert_file", "key_file"])
def test_a_missing_remote_write_tls_file_fails_at_startup(tmp_path: Path, option: str) -> None:
    for name in ("ca.pem", "c.pem", "k.pem"):
        (tmp_path / name).write_text("x")
    (tmp_path / {"ca_file": "ca.pem", "cert_file": "c.pem", "key_file": "k.pem"}[option]).unlink()
    text = remote_write("  tls: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem}\n")
    settings = parse_settings(text, str(tmp_path / "guardian.yaml"))
    assert settings.remote_write is not None

    with pytest.raises(ConfigError, match="no such file") as info:
        remote_write_client(settings.remote_write)
    assert info.value.field == f"remote_write.tls.{option}"


@pytest.mark.parametrize(
    ("tls", "field"),
    [
        ("  tls: {ca_file: odd}\n", "remote_write.tls.ca_file"),
        ("  tls: {cert_file: odd, key_file: k.pem}\n", "remote_write.tls.cert_file"),
        ("  bearer_token_file: odd\n", "remote_write.bearer_token_file"),
        (
            "  basic_auth: {username: u, password_file: odd}\n",
            "remote_write.basic_auth.password_file",
        ),
    ],
)
@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file (a character device)"),
        (lambda p: p.write_bytes(b"x" * (2 << 20)), "too large"),
    ],
    ids=["fifo", "dev-zero", "2MiB"],
)
def test_an_unsafe_client_file_fails_at_startup(
    tmp_path: Path, tls: str, field: str, make: object, reason: str
) -> None:
    (tmp_path / "k.pem").write_text("x")
    assert callable(make)
    make(tmp_path / "odd")
    settings = parse_settings(remote_write(tls), str(tmp_path / "guardian.yaml"))
    assert settings.remote_write is not None

    with pytest.raises(ConfigError) as info:
        remote_write_client(settings.remote_write)
    assert (info.value.path, info.value.field) == (str(tmp_path / "odd"), field)
    assert reason in info.value.reason


def test_the_engine_runs_its_queries_with_the_configured_concurrency(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("groups: [{name: g, rules: [{alert: A, expr: up == 0}]}]\n")
    config = tmp_path / "conf.yaml"
    config.write_text(HEAD.replace("rule_files", "  concurrent_queries: 3\nrule_files"))
    parts = build_engine(load_settings(config), persistent=False)
    try:
        assert isinstance(parts.engine.fan_out, ThreadFanOut)
        assert parts.engine.fan_out.limit == 3
        assert parts.engine.sharding is None  # query_shards 1: every query whole
    finally:
        parts.engine.close()
        parts.querier.close()


def test_the_engine_splits_queries_as_configured(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("groups: [{name: g, rules: [{alert: A, expr: up == 0}]}]\n")
    config = tmp_path / "conf.yaml"
    config.write_text(
        HEAD.replace("rule_files", "  query_shards: 3\n  shard_labels: [node]\nrule_files")
    )
    parts = build_engine(load_settings(config), persistent=False)
    try:
        sharding = parts.engine.sharding
        assert sharding is not None
        assert (sharding.shards, sharding.labels) == (3, ("node",))
    finally:
        parts.engine.close()
        parts.querier.close()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("query_shards: 0", "prometheus.query_shards"),
        ("query_shards: 17", "prometheus.query_shards"),
        ("shard_labels: [uuid, 'not a label']", "prometheus.shard_labels"),
        ("shard_labels: [__name__]", "prometheus.shard_labels"),
    ],
)
def test_query_shards_and_labels_are_checked_at_load(line: str, field: str) -> None:
    text = HEAD.replace("  url: http://prom:9090\n", f"  url: http://prom:9090\n  {line}\n")
    with pytest.raises(ConfigErrors) as info:
        parse_settings(text, "conf.yaml")
    error = info.value.errors[0]
    assert (error.path, error.line, error.field) == ("conf.yaml", 3, field)
    assert parse_settings(HEAD, "conf.yaml").prometheus.query_shards == 1
