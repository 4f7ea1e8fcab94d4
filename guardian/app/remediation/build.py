"""Build the remediation parts from settings, for ``guardian run`` and the CLI commands.

app/controller.py wires them (see docs/policies.md, "Wiring")::

    side = EngineSide(engine_alerts(engine), pipeline_group_names(engine.groups), engine.ready)
    parts = build_remediation(settings.remediation, engine.store.db, side)
    engine.listeners.append(parts.loop.on_evaluation)
    parts.start_leader_election(on_lost=runner.leadership_lost)  # exit 1: lease lost
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from guardian.adapters.cluster_check import MisconfigurationStore
from guardian.adapters.kube.credentials import KubeCredentials, load_api_client
from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.fence import FencedRest
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.clusters import (
    ClusterFilter,
    SourceClusters,
    SourceIdentities,
    UidCheck,
    alerts_only,
    no_identities,
)
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.leader import LeaseElector, LeaseTiming
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.pending_pods import PendingPods
from guardian.app.remediation.policy_files import load_policies
from guardian.app.remediation.policy_objects import PolicyObjects
from guardian.app.remediation.step_runner import WriteClock
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import load_settings
from guardian.app.settings.remediation import RemediationSettings
from guardian.engine.remediation import PlannerSettings, is_pipeline
from guardian.engine.remediation.cluster_uid import UID_NAMESPACE
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.lookback import lookback_seconds
from guardian.model.alerts import AlertState
from guardian.model.reclaim import FiringAlert
from guardian.model.shared_episode import SharedEpisode


def command_credentials(
    kubeconfig: str | None, context: str | None, config: str | None, env: Mapping[str, str]
) -> KubeCredentials:
    """A CLI command's credentials: its flags, else the ``config``'s remediation settings,
    else the standard chain (in-cluster, $KUBECONFIG, ~/.kube/config)."""
    if config and not kubeconfig:
        remediation = load_settings(config, env).remediation
        kubeconfig = remediation.kubeconfig
        context = context or remediation.kube_context
    return KubeCredentials(kubeconfig, context, env)


def engine_alerts(engine: RuleEngine) -> Callable[[], list[FiringAlert]]:
    def alerts() -> list[FiringAlert]:
        windows = rule_windows(engine.groups)  # groups change on a reload
        return [
            FiringAlert(
                a.alert.labels,
                a.alert.active_at,
                a.alert.state is AlertState.FIRING,
                group=a.group,
                value=a.alert.value,
                window=windows.get((a.group, a.rule), 0.0),
            )
            for a in engine.active_alerts()
        ]

    return alerts


def rule_windows(groups: Sequence[CompiledGroup]) -> dict[tuple[str, str], float]:
    """(group, rule) -> how far back the rule looks: what its alerts' evidence covers.
    Rules of one name in a group keep the shortest window (the weakest claim)."""
    windows: dict[tuple[str, str], float] = {}
    for group in groups:
        for _key, compiled in group.rules:
            key, seconds = (group.name, compiled.rule.name), lookback_seconds(compiled.rule.expr)
            windows[key] = min(windows.get(key, seconds), seconds)
    return windows


def pipeline_group_names(groups: Sequence[CompiledGroup]) -> tuple[str, ...]:
    """Groups with ``guardian_class: pipeline`` rules: their health gates every action."""
    return tuple(
        sorted({g.name for g in groups for _key, rule in g.rules if is_pipeline(rule.rule.labels)})
    )


def state_database(state: str | None, config: str | None, env: Mapping[str, str]) -> str | None:
    """The state database a CLI command uses: ``state``, else the ``config``'s state_path."""
    if state:
        return state
    if config:
        return load_settings(config, env).state_path
    return None


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


def shared_store(rest: KubeRest, settings: RemediationSettings) -> EpisodeStore:
    shared = settings.shared_state
    return EpisodeStore(
        rest,
        settings.controller_namespace,
        prefix=shared.config_map_prefix,
        shards=shared.shards,
        retention=shared.retention,
    )


@dataclass
class RemediationParts:
    loop: RemediationLoop
    ledger: Ledger
    rest: KubeRest
    metrics: RemediationMetrics
    journal: EpisodeJournal
    elector: LeaseElector | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    watchers: list[PolicyObjects | PendingPods] = field(default_factory=list)

    def shared_episodes(self) -> list[SharedEpisode]:
        """Every shared episode, read now: what any replica's status shows."""
        mine = self.journal.store
        fresh = EpisodeStore(self.rest, mine.namespace, prefix=mine.prefix, shards=mine.shards)
        fresh.load()
        return fresh.episodes()

    def may_write(self) -> bool:
        """The fence as a question (the Slack notifier asks it before each call)."""
        return self.elector is None or self.elector.is_leader()

    def start_leader_election(self, on_lost: Callable[[], None]) -> None:
        """Elect in a background thread; until elected, cycles are skipped. A new
        leadership reads the shared state again before it acts."""
        elector = self.elector
        if elector is None:
            return
        self.thread = threading.Thread(
            target=elector.run,
            args=(self.journal.invalidate, on_lost, self.stop),
            name="leader-election",
            daemon=True,
        )
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        for watcher in self.watchers:
            watcher.stop()
        if self.thread is not None:
            self.thread.join(timeout=5)
        self.rest.api_client.close()


@dataclass(frozen=True)
class EngineSide:
    """What remediation takes from the rule engine: its alerts now, the pipeline rule
    groups whose health every action needs, and whether every group has been evaluated
    since it started (no cycle before: an alert not evaluated yet has not ended)."""

    alerts: Callable[[], Sequence[FiringAlert]]
    pipeline_groups: Sequence[str] = ()
    ready: Callable[[], bool] = lambda: True
    wall_clock: Callable[[], float] | None = None  # a step's time is its write's


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach the cluster and tell it apart: a ready API client (else the settings'
    credentials, looked up in ``env``), this controller's cluster when
    ``settings.cluster`` is unset, and what reads the clusters the query endpoint serves."""

    api_client: Any = None
    env: Mapping[str, str] | None = None
    default_cluster: str = ""
    source_clusters: SourceClusters | None = None
    source_identities: SourceIdentities | None = None  # which exporter reports which UID


def _cluster_filter(
    cluster: str, access: ClusterAccess, db: Database, rest: KubeRest, metrics: RemediationMetrics
) -> ClusterFilter:
    """The loop's cluster filter; this cluster's UID is read through ``rest``."""
    uids = UidCheck(
        access.source_identities or no_identities,
        lambda: KubeReader(rest).namespace_uid(UID_NAMESPACE),
        MisconfigurationStore.attach(db),
    )
    return ClusterFilter(
        cluster,
        access.source_clusters or alerts_only,
        RefusedAlertStore.attach(db),
        metrics,
        uids,
    )


def build_remediation(
    settings: RemediationSettings,
    db: Database,
    engine: EngineSide,
    access: ClusterAccess = ClusterAccess(),
    metrics: RemediationMetrics | None = None,
) -> RemediationParts:
    """The remediation loop and what it runs on, from settings."""
    api_client = access.api_client
    if api_client is None:
        credentials = KubeCredentials(settings.kubeconfig, settings.kube_context, access.env or {})
        api_client = load_api_client(credentials)
    rest = KubeRest(api_client, timeout=settings.api_timeout)
    metrics = metrics or RemediationMetrics()
    ledger = Ledger.attach(db)
    cluster = settings.cluster or access.default_cluster
    clusters = _cluster_filter(cluster, access, db, rest, metrics)
    identity = settings.leader_election.identity or default_identity()
    # Which replica made a call, in the API server's audit log.
    rest.api_client.user_agent = f"gpu-guardian/{identity}"
    elector = _elector(settings, rest, identity)
    writer = rest if elector is None else FencedRest(rest, elector.check)  # writes ask first
    reader = KubeReader(writer)
    journal = EpisodeJournal(shared_store(writer, settings), identity)
    executor = Executor(writer, reader, instance=identity)
    leads = elector.is_leader if elector is not None else lambda: True
    loop = RemediationLoop(
        load_policies(settings.policy_files),
        LoopParts(reader, executor, ledger, journal, clusters),
        LoopSource(engine.alerts, engine.ready, leads),
        LoopSettings(
            _planner(settings, engine.pipeline_groups),
            settings.controller_namespace,
            settings.cycle_interval,
            WriteClock(engine.wall_clock, max(settings.cycle_interval, 60.0)),
        ),
        metrics,
    )
    parts = RemediationParts(loop, ledger, rest, metrics, journal, elector)
    _watch(parts, settings, writer, identity)
    return parts


def _planner(settings: RemediationSettings, pipeline_groups: Sequence[str]) -> PlannerSettings:
    return PlannerSettings(
        dry_run=settings.dry_run,
        kill_switch=settings.kill_switch,
        max_actions_per_cycle=settings.max_actions_per_cycle,
        max_health_age=settings.max_health_age,
        pipeline_groups=tuple(pipeline_groups),
    )


def _elector(settings: RemediationSettings, rest: KubeRest, identity: str) -> LeaseElector | None:
    le = settings.leader_election
    if not le.enabled:
        return None
    return LeaseElector(
        rest,
        le.lease_namespace or settings.controller_namespace,
        le.lease_name,
        identity,
        LeaseTiming(le.lease_duration, le.renew_deadline, le.retry_period),
    )


def _watch(
    parts: RemediationParts, settings: RemediationSettings, writer: KubeRest, identity: str
) -> None:
    """Every replica keeps the policy objects and Pending pods warm; the leader acts."""
    loop, api_client = parts.loop, parts.rest.api_client
    if settings.policy_objects:
        objects = PolicyObjects.watching(api_client, settings.api_timeout, identity)
        objects.set_files(loop.policies)
        loop.policy_objects, loop.status_writer = objects, writer
        parts.watchers.append(objects)
    pending = PendingPods.watching(api_client, settings.api_timeout)
    loop.pending_pods = pending
    parts.watchers.append(pending)
    for watcher in parts.watchers:
        watcher.start()
