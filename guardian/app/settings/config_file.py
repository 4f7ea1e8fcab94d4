"""The controller's settings: one YAML file, overridable by ``GUARDIAN_*`` variables.

``GUARDIAN_PROMETHEUS__URL=http://...`` sets ``prometheus.url``: a double underscore
separates nesting levels, and the value is read as YAML (``true``, ``[a, b]``). The
caller passes the environment in; nothing here reads ``os.environ``. Every error names
the file (or variable), the line and the field. Relative paths are taken relative to
the config file's directory, as Prometheus does.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from guardian.app.settings.remediation import RemediationSettings
from guardian.app.settings.slack import SlackSettings
from guardian.model.labels import is_valid_label_name
from guardian_common.durations import parse_duration
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.yamldoc import dotted, parse_yaml

ENV_PREFIX = "GUARDIAN_"
# Variables the CLI reads itself, not settings.
_ENV_RESERVED = frozenset({"GUARDIAN_CONFIG"})


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ValueError(str(exc)) from exc
    return value


Seconds = Annotated[float, BeforeValidator(_duration), Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BasicAuth(_Strict):
    username: str
    password: str | None = Field(default=None, repr=False)
    password_file: str | None = None

    @model_validator(mode="after")
    def _one_password(self) -> BasicAuth:
        if self.password is not None and self.password_file is not None:
            raise ValueError("set password or password_file, not both")
        return self


class TLSSettings(_Strict):
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False

    @model_validator(mode="after")
    def _pair(self) -> TLSSettings:
        if self.key_file and not self.cert_file:
            raise ValueError("key_file needs cert_file")
        return self


class HttpClientSettings(_Strict):
    url: str
    timeout: Seconds = 30.0
    bearer_token_file: str | None = None
    basic_auth: BasicAuth | None = None
    tls: TLSSettings = TLSSettings()
    headers: dict[str, str] = {}

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        return url

    @model_validator(mode="after")
    def _check(self) -> HttpClientSettings:
        if self.bearer_token_file and self.basic_auth:
            raise ValueError("set bearer_token_file or basic_auth, not both")
        return self


class PrometheusSettings(HttpClientSettings):
    thanos: bool = False
    method: Literal["GET", "POST"] = "GET"


class RemoteWriteSettings(HttpClientSettings):
    timeout: Seconds = 10.0


class RestoreSettings(_Strict):
    for_grace_period: Seconds = 600.0
    for_outage_tolerance: Seconds = 3600.0


class Settings(_Strict):
    prometheus: PrometheusSettings
    rule_files: list[str] = Field(min_length=1)
    evaluation_interval: Seconds = 60.0
    state_path: str = "/var/lib/guardian/state.db"
    external_labels: dict[str, str] = {}
    external_url: str = ""
    listen_address: str = "127.0.0.1:9469"
    remote_write: RemoteWriteSettings | None = None
    restore: RestoreSettings = RestoreSettings()
    remediation: RemediationSettings = RemediationSettings()
    slack: SlackSettings | None = None  # None: no Slack notifications

    @field_validator("external_labels")
    @classmethod
    def _label_names(cls, labels: dict[str, str]) -> dict[str, str]:
        for name in labels:
            if not is_valid_label_name(name):
                raise ValueError(f"invalid external label name {name!r}")
        return labels

    @field_validator("listen_address")
    @classmethod
    def _address(cls, address: str) -> str:
        _, sep, port = address.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError(f"must be HOST:PORT, got {address!r}")
        return address

    @property
    def listen_host_port(self) -> tuple[str, int]:
        host, _, port = self.listen_address.rpartition(":")
        return host or "0.0.0.0", int(port)  # noqa: S104 - an empty host means all, as Go

    def expanded_rule_files(self) -> list[str]:
        """Rule files after glob expansion, sorted and unique; a pattern that matches
        nothing is an error (a typo would otherwise silently load no rules)."""
        files: list[str] = []
        for pattern in self.rule_files:
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise ConfigError(f"no rule file matches {pattern!r}", field="rule_files")
            files.extend(m for m in matches if m not in files)
        return files


def _set_path(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value


def _env_overrides(env: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name in _ENV_RESERVED:
            continue
        path = tuple(p.lower() for p in name[len(ENV_PREFIX) :].split("__"))
        if path[0] not in Settings.model_fields:
            raise ConfigError(f"unknown setting {path[0]!r}", path=f"env {name}")
        out[path] = raw
    return out


def _resolve(base: Path, value: str | None) -> str | None:
    if value is None or value == ":memory:":
        return value
    path = Path(value)
    return str(path if path.is_absolute() else base / path)


def _resolve_paths(settings: Settings, base: Path) -> Settings:
    def client(c: Any) -> Any:
        if c is None:
            return None
        tls = c.tls.model_copy(
            update={
                k: _resolve(base, getattr(c.tls, k)) for k in ("ca_file", "cert_file", "key_file")
            }
        )
        auth = c.basic_auth
        if auth is not None and auth.password_file:
            auth = auth.model_copy(update={"password_file": _resolve(base, auth.password_file)})
        return c.model_copy(
            update={
                "tls": tls,
                "basic_auth": auth,
                "bearer_token_file": _resolve(base, c.bearer_token_file),
            }
        )

    return settings.model_copy(
        update={
            "rule_files": [str(_resolve(base, p)) for p in settings.rule_files],
            "state_path": _resolve(base, settings.state_path),
            "prometheus": client(settings.prometheus),
            "remote_write": client(settings.remote_write),
            "remediation": settings.remediation.resolved(base),
            "slack": _resolve_slack(settings.slack, base),
        }
    )


def _resolve_slack(slack: SlackSettings | None, base: Path) -> SlackSettings | None:
    if slack is None:
        return None
    return slack.model_copy(
        update={
            "token_file": _resolve(base, slack.token_file),
            "webhook_url_file": _resolve(base, slack.webhook_url_file),
        }
    )


def parse_settings(text: str, source: str, env: Mapping[str, str] | None = None) -> Settings:
    """Validate config ``text`` from file ``source`` with ``env`` overrides applied."""
    doc = parse_yaml(text, source)
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise ConfigError("the config must be a mapping", path=source, line=1)
    overrides = _env_overrides(env or {})
    for path, raw in overrides.items():
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        _set_path(data, list(path), value)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        errors: list[ConfigError] = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
            env_name = _env_source(loc, overrides)
            if env_name is not None:
                errors.append(ConfigError(err["msg"], path=f"env {env_name}", field=dotted(loc)))
            else:
                errors.append(doc.error(err["msg"], loc))
        raise ConfigErrors(errors) from None
    return _resolve_paths(settings, Path(source).resolve().parent)


def _env_source(loc: tuple[str | int, ...], overrides: Mapping[tuple[str, ...], str]) -> str | None:
    for path in overrides:
        if tuple(loc[: len(path)]) == path:
            return ENV_PREFIX + "__".join(p.upper() for p in path)
    return None


def load_settings(path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config: {exc.strerror or exc}", path=source) from exc
    return parse_settings(text, source, env)
