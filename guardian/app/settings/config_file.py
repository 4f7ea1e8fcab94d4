"""The controller's settings: one YAML file, overridable by ``GUARDIAN_*`` variables.

``GUARDIAN_PROMETHEUS__URL=http://...`` sets ``prometheus.url``: a double underscore
separates nesting levels, and the value is read as YAML (``true``, ``[a, b]``). Variables
in the forms Kubernetes injects for Services (``GUARDIAN_SERVICE_HOST``,
``GUARDIAN_PORT=tcp://...``, see :mod:`guardian_common.service_links`) are not overrides
and are skipped. The caller passes the environment in; nothing here reads
``os.environ``. Every error names the file (or variable), the line and the field.
Relative paths are taken relative to the config file's directory, as Prometheus does.
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from guardian.app.settings.alert_source import AlertsSettings
from guardian.app.settings.alertmanager_output import AlertmanagerSettings
from guardian.app.settings.clients import PrometheusSettings, RemoteWriteSettings
from guardian.app.settings.prices import PriceSettings
from guardian.app.settings.remediation import RemediationSettings
from guardian.app.settings.slack import SlackSettings
from guardian.app.settings.web import WebSettings
from guardian.model.labels import is_valid_label_name
from guardian_common.config_types import (
    Bool,
    ConfigPath,
    Duration,
    DurationOrZero,
    Int,
    RelativePath,
    StrictModel,
)
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.files import MAX_FILE_BYTES, read_text
from guardian_common.service_links import is_service_link
from guardian_common.yamldoc import dotted, parse_yaml

ENV_PREFIX = "GUARDIAN_"
# Variables the CLI reads itself, not settings.
_ENV_RESERVED = frozenset({"GUARDIAN_CONFIG"})


StatePath = Annotated[str, RelativePath(keep=frozenset({":memory:"}))]


class RestoreSettings(StrictModel):
    """How ``for`` state is restored after a restart, as Prometheus's ``--rules.alert.*``:
    from the local cache (``state_path``) and from ``ALERTS_FOR_STATE`` in Prometheus."""

    for_grace_period: Duration = 600.0
    """Seconds an alert restored mid-``for`` still waits at least before firing. 10m:
    Prometheus's default, so a restart cannot make an alert fire at once."""
    for_outage_tolerance: Duration = 3600.0
    """Seconds of downtime after which ``for`` state is not restored (the alert starts
    over). 1h: Prometheus's default."""
    from_prometheus: Bool = True
    """Read ``ALERTS_FOR_STATE`` back from ``prometheus`` after each group's second
    evaluation (what ``remote_write`` wrote, or Prometheus evaluating the same rules).
    On: a replica that starts with an empty state directory keeps ``for`` progress."""


class ReloadSettings(StrictModel):
    """Applying edited config, rule and policy files while running (SIGHUP does it too)."""

    poll_interval: DurationOrZero = 10.0
    """Seconds between checks of the files' content; 0: only on SIGHUP. 10s: hashing a
    few small files is cheap, and an edit then applies well before the next evaluation
    at the default 1m interval (the kubelet itself takes up to a minute or so to show
    an edited ConfigMap in the volume)."""


class Settings(StrictModel):
    prometheus: PrometheusSettings
    """The Prometheus or Thanos Query that rules are evaluated against."""
    rule_files: list[ConfigPath] = Field(min_length=1)
    """Rule file globs, relative to the config file; a glob that matches nothing is an error."""
    max_rule_file_bytes: Int = Field(default=MAX_FILE_BYTES, ge=1 << 16, le=1 << 26)
    """Largest rule file loaded, in bytes (64 KiB to 64 MiB). 1 MiB: what a ConfigMap
    holds; raise it for a large generated file (it may then hold more YAML nodes too, one
    per 20 bytes). Every other input file has a fixed 1 MiB limit."""
    evaluation_interval: Duration = 60.0
    """Seconds between evaluations of a group without its own ``interval``. 1m:
    Prometheus's default, and GPU idleness is judged over tens of minutes."""
    state_path: StatePath = "/var/lib/guardian/state.db"
    """SQLite file that keeps alert state across restarts (``:memory:``: none). Under
    /var/lib, where the manifests mount a volume."""
    external_labels: dict[str, str] = Field(default_factory=dict)
    """``$externalLabels`` in templates. Not added to alert labels, as in Prometheus's
    rule manager; added (where absent) to the alerts sent to ``alertmanager``."""
    external_url: str = ""
    """``$externalURL`` in templates; empty, as nothing is known about how users reach us."""
    listen_address: str = "127.0.0.1:9469"
    """HOST:PORT of /metrics and the API. Loopback: nothing is exposed unless asked for
    (the manifests bind the pod IP). An IPv6 host may be written in brackets."""
    web: WebSettings = WebSettings()
    """TLS, authentication and limits of the endpoint at ``listen_address``."""
    remote_write: RemoteWriteSettings | None = None
    """Where ``ALERTS`` series are written; unset: they are not written."""
    restore: RestoreSettings = RestoreSettings()
    """How ``for`` state survives a restart."""
    reload: ReloadSettings = ReloadSettings()
    """Picking up edited files without a restart; an invalid edit keeps the running config."""
    remediation: RemediationSettings = RemediationSettings()
    """Reclaiming idle GPUs; off and dry-run by default."""
    slack: SlackSettings | None = None
    """Slack notifications; unset: none are sent."""
    alertmanager: AlertmanagerSettings | None = None
    """Alertmanagers that receive the alerts and whose silences pause the ladder; unset:
    none (see docs/alertmanager.md)."""
    alerts: AlertsSettings = AlertsSettings()
    """Where alerts come from: this engine, or a Prometheus or Thanos Ruler."""
    prices: PriceSettings = PriceSettings()
    """GPU-hour prices by model, for Slack's cost lines, ``guardian report`` and
    ``guardian simulate``: one table. (``slack.prices``, the older place, is still read
    when this is unset; setting both is an error.)"""

    @model_validator(mode="before")
    @classmethod
    def _one_price_table(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        slack = data.get("slack")
        if not isinstance(slack, dict):
            return data
        if "prices" in data and "prices" in slack:
            raise ValueError("prices are set twice: keep the top-level prices, drop slack.prices")
        if "prices" in slack:
            return {**data, "prices": slack["prices"]}
        if "prices" in data:
            return {**data, "slack": {**slack, "prices": data["prices"]}}
        return data

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
        host = host.removeprefix("[").removesuffix("]")  # [::1]:9469
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
        if is_service_link(name, raw):
            continue
        path = tuple(p.lower() for p in name[len(ENV_PREFIX) :].split("__"))
        if path[0] not in Settings.model_fields:
            raise ConfigError(f"unknown setting {path[0]!r}", path=f"env {name}")
        out[path] = raw
    return out


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
    return settings.resolved(Path(source).resolve().parent)


def _env_source(loc: tuple[str | int, ...], overrides: Mapping[tuple[str, ...], str]) -> str | None:
    for path in overrides:
        if tuple(loc[: len(path)]) == path:
            return ENV_PREFIX + "__".join(p.upper() for p in path)
    return None


def load_settings(path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    source = str(path)
    return parse_settings(read_text(source, what="config"), source, env)
