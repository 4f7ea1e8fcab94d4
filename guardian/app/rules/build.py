"""Build the engine's parts from settings: rule files, query client, store, remote write,
for-state restore."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.http_credentials import check_client_files
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.adapters.prometheus_rules import PrometheusRulesReader
from guardian.app.config_files import parse_files
from guardian.app.rules.engine_setup import EngineSinks, EvaluationSetup, RestoreSetup
from guardian.app.rules.metrics import EngineMetrics
from guardian.app.rules.remote_source import RulerSource
from guardian.app.rules.restart_restore_gather import ForStateRestorer
from guardian.app.rules.runtime import RuleEngine
from guardian.app.rules.shard_values import LabelValuesCache
from guardian.app.rules.thread_fan_out import ThreadFanOut
from guardian.app.settings.clients import RemoteWriteSettings
from guardian.app.settings.config_file import Settings
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.loader import parse_rule_file
from guardian.engine.rules.restart_restore import RestorePolicy
from guardian.engine.rules.sharding import Sharding
from guardian.model.rules import RuleFile
from guardian_common.files import MAX_FILE_BYTES

if TYPE_CHECKING:  # the protobuf runtime only where remote write is configured
    from guardian.adapters.remote_write import RemoteWriteClient

logger = logging.getLogger(__name__)


def read_rule_files(paths: Sequence[str], max_bytes: int = MAX_FILE_BYTES) -> list[RuleFile]:
    """Parse every file; raise ConfigErrors with the findings of all of them."""
    return parse_files(paths, parse_rule_file, max_bytes)


def compile_groups(settings: Settings) -> list[CompiledGroup]:
    files = read_rule_files(settings.expanded_rule_files(), settings.max_rule_file_bytes)
    return [
        CompiledGroup.compile(group, settings.evaluation_interval)
        for rule_file in files
        for group in rule_file.groups
    ]


def prometheus_access(settings: Settings) -> PrometheusAccess:
    p = settings.prometheus
    return PrometheusAccess(p.client_config(), thanos=p.thanos, method=p.method)


def query_sharding(
    settings: Settings, querier: PrometheusQuerier, monotonic: Callable[[], float] = time.monotonic
) -> Sharding | None:
    """How rules' queries are split (``prometheus.query_shards``); None: asked whole."""
    p = settings.prometheus
    if p.query_shards < 2:
        return None
    values = LabelValuesCache(querier.label_values, monotonic=monotonic)
    return Sharding(p.query_shards, tuple(p.shard_labels), values)


def remote_write_client(rw: RemoteWriteSettings) -> RemoteWriteClient:
    """The client for ``rw``. Raises ConfigError if a TLS file is missing or a file is not
    one it can read: remote write runs after evaluations, so a typo would otherwise only
    show in the logs."""
    # Imported here: the protobuf runtime it needs costs a controller without remote
    # write several MiB.
    from guardian.adapters.remote_write import RemoteWriteClient

    config = rw.client_config()
    check_client_files(config, "remote_write")
    return RemoteWriteClient(config)


def ruler_source(settings: Settings) -> RulerSource | None:
    """With ``alerts.source: prometheus``: the ruler the alerts are read from (``alerts.ruler``,
    else the ``prometheus`` endpoint)."""
    if settings.alerts.source != "prometheus":
        return None
    endpoint = settings.alerts.ruler or settings.prometheus
    config = endpoint.client_config()
    check_client_files(config, "alerts.ruler" if settings.alerts.ruler else "prometheus")
    return RulerSource(PrometheusRulesReader(config))


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
    clock: Callable[[], float] = time.time,
) -> EngineParts:
    """The engine for ``settings``. ``persistent=False`` (``guardian eval``) opens no store
    and no remote write and restores nothing: nothing outside this process changes."""
    groups = compile_groups(settings)
    metrics = metrics or EngineMetrics()
    querier = PrometheusQuerier(
        prometheus_access(settings), observer=metrics.observe_query, monotonic=monotonic
    )
    ruler = ruler_source(settings)  # the ruler writes its own ALERTS and keeps its for-state
    if ruler is not None and settings.remote_write is not None:
        logger.warning("alerts.source is prometheus: remote_write is not used (the ruler writes)")
    store = AlertStore.open(settings.state_path) if persistent else None
    remote = (
        remote_write_client(settings.remote_write)
        if persistent and settings.remote_write is not None and ruler is None
        else None
    )
    policy = RestorePolicy(settings.restore.for_grace_period, settings.restore.for_outage_tolerance)
    restorer = (
        ForStateRestorer(
            querier, external_labels=settings.external_labels, policy=policy, metrics=metrics
        )
        if persistent and settings.restore.from_prometheus and ruler is None
        else None
    )
    engine = RuleEngine(
        groups,
        querier.query,
        metrics=metrics,
        evaluation=EvaluationSetup(
            env=TemplateEnv(settings.external_labels, settings.external_url),
            monotonic=monotonic,
            fan_out=ThreadFanOut(settings.prometheus.concurrent_queries),
            sharding=query_sharding(settings, querier, monotonic),
            evaluator=ruler,
        ),
        restore=RestoreSetup(policy=policy, from_prometheus=restorer, clock=clock),
        sinks=EngineSinks(store=store, remote_write=remote),
    )
    return EngineParts(engine, querier)
