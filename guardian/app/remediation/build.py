"""Build the remediation parts from settings, for ``guardian run`` and the CLI commands.

app/controller.py wires them (see docs/policies.md, "Wiring")::

    parts = build_remediation(settings.remediation, db=engine.store.db,
                              alerts=engine_alerts(engine),
                              pipeline_groups=pipeline_group_names(engine.groups))
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

from guardian.adapters.kube.credentials import KubeCredentials, load_api_client
from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.clusters import ClusterFilter, SourceClusters, alerts_only
from guardian.app.remediation.leader import LeaseElector
from guardian.app.remediation.loop import RemediationLoop
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.policy_files import load_policies
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import load_settings
from guardian.app.settings.remediation import RemediationSettings
from guardian.engine.remediation import PlannerSettings, is_pipeline
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.model.alerts import AlertState
from guardian.model.reclaim import FiringAlert


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
        return [
            FiringAlert(
                a.alert.labels,
                a.alert.active_at,
                a.alert.state is AlertState.FIRING,
                group=a.group,
                value=a.alert.value,
            )
            for a in engine.active_alerts()
        ]

    return alerts


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


@dataclass
class RemediationParts:
    loop: RemediationLoop
    ledger: Ledger
    rest: KubeRest
    metrics: RemediationMetrics
    elector: LeaseElector | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start_leader_election(self, on_lost: Callable[[], None]) -> None:
        """Elect in a background thread; until elected, cycles are skipped."""
        elector = self.elector
        if elector is None:
            return
        self.thread = threading.Thread(
            target=elector.run,
            args=(lambda: None, on_lost, self.stop),
            name="leader-election",
            daemon=True,
        )
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        self.rest.api_client.close()


def build_remediation(
    settings: RemediationSettings,
    *,
    db: Database,
    alerts: Callable[[], Sequence[FiringAlert]],
    pipeline_groups: Sequence[str],
    api_client: Any = None,
    metrics: RemediationMetrics | None = None,
    default_cluster: str = "",
    source_clusters: SourceClusters | None = None,
    env: Mapping[str, str] | None = None,
) -> RemediationParts:
    """``default_cluster`` is this controller's cluster when ``settings.cluster`` is unset;
    ``source_clusters`` reads which clusters the query endpoint serves; ``env`` is where
    the standard credential chain looks (kubeconfig unset)."""
    policies = load_policies(settings.policy_files)
    if api_client is None:
        credentials = KubeCredentials(settings.kubeconfig, settings.kube_context, env or {})
        api_client = load_api_client(credentials)
    rest = KubeRest(api_client, timeout=settings.api_timeout)
    reader = KubeReader(rest)
    metrics = metrics or RemediationMetrics()
    ledger = Ledger.attach(db)
    clusters = ClusterFilter(
        settings.cluster or default_cluster,
        source_clusters or alerts_only,
        RefusedAlertStore.attach(db),
        metrics,
    )
    elector: LeaseElector | None = None
    le = settings.leader_election
    if le.enabled:
        elector = LeaseElector(
            rest,
            le.lease_namespace or settings.controller_namespace,
            le.lease_name,
            le.identity or default_identity(),
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
        )
    loop = RemediationLoop(
        policies=policies,
        reader=reader,
        executor=Executor(rest, reader, instance=le.identity or default_identity()),
        ledger=ledger,
        alerts=alerts,
        planner=PlannerSettings(
            dry_run=settings.dry_run,
            kill_switch=settings.kill_switch,
            max_actions_per_cycle=settings.max_actions_per_cycle,
            max_health_age=settings.max_health_age,
            pipeline_groups=tuple(pipeline_groups),
        ),
        controller_namespace=settings.controller_namespace,
        cycle_interval=settings.cycle_interval,
        metrics=metrics,
        is_leader=elector.is_leader if elector is not None else (lambda: True),
        clusters=clusters,
    )
    return RemediationParts(loop, ledger, rest, metrics, elector)
