"""Build the engine's parts from settings: rule files, query client, store, remote write."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.app.config_files import parse_files
from guardian.app.rules.metrics import EngineMetrics
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import HttpClientSettings, Settings
from guardian.engine.rules.alerting import TemplateEnv
from guardian.engine.rules.for_state import RestorePolicy
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.loader import parse_rule_file
from guardian.model.rules import RuleFile
from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)


def read_rule_files(paths: Sequence[str]) -> list[RuleFile]:
    """Parse every file; raise ConfigErrors with the findings of all of them."""
    return parse_files(paths, parse_rule_file)


def compile_groups(settings: Settings) -> list[CompiledGroup]:
    files = read_rule_files(settings.expanded_rule_files())
    return [
        CompiledGroup.compile(group, settings.evaluation_interval)
        for rule_file in files
        for group in rule_file.groups
    ]


def prometheus_access(settings: Settings) -> PrometheusAccess:
    p = settings.prometheus
    auth = p.basic_auth
    return PrometheusAccess(
        url=p.url,
        timeout_seconds=p.timeout,
        thanos=p.thanos,
        bearer_token_file=p.bearer_token_file,
        basic_auth_username=auth.username if auth else None,
        basic_auth_password=auth.password if auth else None,
        basic_auth_password_file=auth.password_file if auth else None,
        ca_file=p.tls.ca_file,
        cert_file=p.tls.cert_file,
        key_file=p.tls.key_file,
        insecure_skip_verify=p.tls.insecure_skip_verify,
        method=p.method,
        headers=p.headers,
    )


def remote_write_client(rw: HttpClientSettings) -> RemoteWriteClient:
    if rw.tls.insecure_skip_verify:
        raise ConfigError("not supported for remote write", field="remote_write.tls")
    auth = rw.basic_auth
    basic: tuple[str, str] | None = None
    if auth is not None:
        password = auth.password or ""
        if auth.password_file:
            password = Path(auth.password_file).read_text(encoding="utf-8").strip()
        basic = (auth.username, password)
    return RemoteWriteClient(
        rw.url,
        timeout=rw.timeout,
        headers=rw.headers,
        bearer_token_file=Path(rw.bearer_token_file) if rw.bearer_token_file else None,
        basic_auth=basic,
        ca_file=Path(rw.tls.ca_file) if rw.tls.ca_file else None,
        cert_file=Path(rw.tls.cert_file) if rw.tls.cert_file else None,
        key_file=Path(rw.tls.key_file) if rw.tls.key_file else None,
    )


@dataclass
class EngineParts:
    engine: RuleEngine
    querier: PrometheusQuerier


def build_engine(
    settings: Settings,
    *,
    metrics: EngineMetrics | None = None,
    persistent: bool = True,
    monotonic: Callable[[], float] = time.monotonic,
) -> EngineParts:
    """The engine for ``settings``. ``persistent=False`` (``guardian eval``) opens no store
    and no remote write: nothing outside this process changes."""
    groups = compile_groups(settings)
    metrics = metrics or EngineMetrics()
    querier = PrometheusQuerier(
        prometheus_access(settings), observer=metrics.observe_query, monotonic=monotonic
    )
    store = AlertStore.open(settings.state_path) if persistent else None
    remote = (
        remote_write_client(settings.remote_write)
        if persistent and settings.remote_write is not None
        else None
    )
    engine = RuleEngine(
        groups,
        querier.query,
        metrics=metrics,
        env=TemplateEnv(settings.external_labels, settings.external_url),
        store=store,
        remote_write=remote,
        restore_policy=RestorePolicy(
            settings.restore.for_grace_period, settings.restore.for_outage_tolerance
        ),
        monotonic=monotonic,
    )
    return EngineParts(engine, querier)
