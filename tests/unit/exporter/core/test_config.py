"""Settings from flags and environment, the vGPU ratio file and the users file."""

from __future__ import annotations

from pathlib import Path

import bcrypt
import pytest

from exporter.adapters.vgpu_config import load_vgpu_ratios
from exporter.app.settings import settings_from
from exporter.cli import build_parser, main
from exporter.model.errors import ConfigError
from guardian_common.http_auth import check_password, load_users

NO_FLAGS: dict[str, object] = {}


def test_defaults_and_hostname_fallback() -> None:
    s = settings_from(NO_FLAGS, {}, "host-1")
    assert (s.backend, s.port, s.interval, s.timeout, s.node_name) == (
        "nvml",
        9400,
        5.0,
        5.0,
        "host-1",
    )


def test_flags_beat_environment_which_beats_defaults() -> None:
    env = {
        "GUARDIAN_EXPORTER_PORT": "9500",
        "GUARDIAN_EXPORTER_INTERVAL": "2",
        "NODE_NAME": "gpu-7",
    }
    s = settings_from({"port": 9600}, env, "host-1")
    assert (s.port, s.interval, s.node_name) == (9600, 2.0, "gpu-7")


@pytest.mark.parametrize(
    ("flags", "env", "where"),
    [
        ({}, {"GUARDIAN_EXPORTER_PORT": "http"}, "GUARDIAN_EXPORTER_PORT (environment)"),
        ({"interval": -1.0}, {}, "--interval"),
        ({"backend": "dcgm"}, {}, "--backend"),
        ({"backend": "simulated"}, {}, "--backend"),
        ({"tls_cert_file": Path("c.pem")}, {}, "--tls-cert-file"),
        (
            {},
            {"GUARDIAN_EXPORTER_MAX_REQUESTS": "0"},
            "GUARDIAN_EXPORTER_MAX_REQUESTS (environment)",
        ),
    ],
)
def test_invalid_settings_name_their_source(
    flags: dict[str, object], env: dict[str, str], where: str
) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from(flags, env, "h")
    assert info.value.field is not None
    assert info.value.field.startswith(where)


DURATIONS = (
    "interval",
    "collect_timeout",
    "nvml_backoff_max",
    "kube_timeout",
    "memory_peak_window",
    "activity_peak_window",
)


@pytest.mark.parametrize("name", DURATIONS)
@pytest.mark.parametrize(
    ("text", "seconds"), [("15s", 15.0), ("1m30s", 90.0), ("250ms", 0.25), ("2", 2.0)]
)
def test_duration_flags_and_variables_take_the_shared_syntax(
    name: str, text: str, seconds: float
) -> None:
    flag = "--" + name.replace("_", "-")
    args = build_parser().parse_args(["serve", flag, text])
    from_flag = settings_from({name: getattr(args, name)}, {}, "h")
    var = "GUARDIAN_EXPORTER_" + name.upper()
    from_env = settings_from(NO_FLAGS, {var: text}, "h")
    assert getattr(from_flag, name) == getattr(from_env, name) == seconds


@pytest.mark.parametrize("name", DURATIONS)
@pytest.mark.parametrize("text", ["15x", "1.5m", "soon", "0", "0s", "-5"])
def test_bad_durations_name_the_flag_or_variable(name: str, text: str) -> None:
    flag = "--" + name.replace("_", "-")
    var = "GUARDIAN_EXPORTER_" + name.upper()
    with pytest.raises(ConfigError) as from_flag:
        settings_from({name: text}, {}, "h")
    with pytest.raises(ConfigError) as from_env:
        settings_from(NO_FLAGS, {var: text}, "h")
    assert from_flag.value.field == flag
    assert from_env.value.field == f"{var} (environment)"
    assert repr(text) in str(from_flag.value)
    assert str(from_flag.value).count(repr(text)) == 1  # said once, not twice


def test_a_bad_duration_flag_fails_serve_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--interval", "5 minutes"]) == 2
    err = capsys.readouterr().err
    assert "configuration error: --interval: not a valid duration string: '5 minutes'" in err
    assert "15s or 1m30s" in err


def test_vgpu_file_with_overrides(tmp_path: Path) -> None:
    path = tmp_path / "vgpu.yaml"
    path.write_text("default: 2\nmodels: {'Tesla T4': 4}\nuuids: {GPU-1: 8}\n")
    ratios = load_vgpu_ratios(path)
    assert ratios.ratio_for("GPU-1", "Tesla T4") == 8
    assert ratios.ratio_for("GPU-2", "Tesla T4") == 4
    assert ratios.ratio_for("GPU-2", "A100") == 2
    assert ratios.ratio_for("MIG-1", "A100 MIG 1g", parent_uuid="GPU-1") == 8


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("default: 0\n", "default"),
        ("models: {T4: -1}\n", "models.T4"),
        ("uuids: {GPU-1: x}\n", "uuids.GPU-1"),
        ("ratio: 2\n", "ratio"),
    ],
)
def test_bad_vgpu_ratio_is_a_startup_error_naming_the_field(
    tmp_path: Path, text: str, field: str
) -> None:
    path = tmp_path / "vgpu.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_vgpu_ratios(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == 1


def test_unreadable_vgpu_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read vGPU ratio file"):
        load_vgpu_ratios(tmp_path / "nope.yaml")


def test_users_file(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    path = tmp_path / "users.yaml"
    path.write_text(f"basic_auth_users:\n  prom: '{hashed}'\n")
    users = load_users(path)
    assert check_password(users["prom"], "s3cret")
    assert not check_password(users["prom"], "wrong")
    path.write_text("basic_auth_users:\n  prom: plaintext\n")
    with pytest.raises(ConfigError, match=r"basic_auth_users\.prom: not a bcrypt hash"):
        load_users(path)


def test_kubernetes_service_variables_are_not_settings() -> None:
    # A Service named guardian-exporter injects these into every pod of its namespace.
    env = {
        "GUARDIAN_EXPORTER_PORT": "tcp://10.0.0.12:9400",
        "GUARDIAN_EXPORTER_SERVICE_HOST": "10.0.0.12",
        "GUARDIAN_EXPORTER_SERVICE_PORT": "9400",
        "GUARDIAN_EXPORTER_PORT_9400_TCP_ADDR": "10.0.0.12",
    }
    assert settings_from(NO_FLAGS, env, "h").port == 9400
    assert settings_from(NO_FLAGS, {"GUARDIAN_EXPORTER_PORT": "9500"}, "h").port == 9500


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("default: '2'\n", "default", "must be a number, not the string '2'"),
        ("default: true\n", "default", "must be a number, not a boolean"),
        ("models: {T4: 'x4'}\n", "models.T4", "not the string 'x4'"),
    ],
)
def test_vgpu_ratios_are_numbers_not_text_or_booleans(
    tmp_path: Path, text: str, field: str, reason: str
) -> None:
    path = tmp_path / "vgpu.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_vgpu_ratios(path)
    assert (info.value.field, info.value.line) == (field, 1)
    assert reason in info.value.reason


def test_users_file_errors_name_line_and_user(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    path.write_text("basic_auth_users:\n  prom: 12345\n")
    with pytest.raises(ConfigError) as info:
        load_users(path)
    assert str(info.value) == f"{path}:2: basic_auth_users.prom: the hash must be a string"
    path.write_bytes(b"basic_auth_users:\n  caf\xe9: x\n")
    with pytest.raises(ConfigError, match=r"users\.yaml:2: not UTF-8 text"):
        load_users(path)


def test_idle_fact_settings_default_to_the_shipped_rules() -> None:
    settings = settings_from(NO_FLAGS, {}, "h")
    assert (settings.activity_floor, settings.memory_peak_window) == (0.05, 3600.0)
    assert settings.activity_peak_window == 1800.0
    assert settings_from({}, {"GUARDIAN_EXPORTER_ACTIVITY_FLOOR": "0"}, "h").activity_floor == 0


@pytest.mark.parametrize("floor", [-0.01, 1.01, float("nan"), float("inf")])
def test_an_activity_floor_outside_0_to_1_fails_serve_with_exit_2(
    floor: float, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--activity-floor", str(floor)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("guardian-exporter: configuration error: --activity-floor: ")
