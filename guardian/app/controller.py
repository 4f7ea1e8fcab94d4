"""What `guardian run` adds around the rule engine: remediation and Slack notifications.

Order inside one group evaluation:

1. before the engine's state transaction the Slack notifier gathers (owner details
   from the cluster, its rows from the database) and plans the transitions' messages;
2. the engine commits its alert state and, in the same transaction, the notifier's
   planned rows and outbox operations (SQL only: neither exists without the other,
   and a slow API server never holds the database);
3. listeners run: the remediation loop plans and applies ladder steps (writing the
   ledger), then the notifier reads the new ledger events and wakes its worker.

With leader election on, only the leader notifies and acts; a replica that loses
the lease stops the process (exit status 1) so that it cannot act on stale state.

A config reload is checked whole before anything changes (``prepare_reload``): policies,
the ladder's switches and Slack's settings then change in place; the outbox, the ledger
and the episodes' threads stay.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any, Protocol

from guardian.adapters.kube.credentials import api_access
from guardian.adapters.ledger import Ledger
from guardian.adapters.sqlite_db import Database
from guardian.app.alertmanager.build import AlertmanagerParts, build_alertmanager
from guardian.app.notify import NotifierLinks, SlackNotifier
from guardian.app.notify.interactivity import Interactivity, build_interactivity
from guardian.app.notify.owner_context import OwnerLookup
from guardian.app.notify.picture_delivery import RangeQuery
from guardian.app.notify.secrets import build_transport
from guardian.app.price_metrics import register_prices
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    RemediationParts,
    build_remediation,
    engine_alerts,
    pipeline_group_names,
)
from guardian.app.remediation.clusters import served_clusters, served_identities
from guardian.app.remediation.explain import explain
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.policy_files import load_policies
from guardian.app.remediation.status import StatusReport, build_status
from guardian.app.rules.engine_setup import TransactionWriter
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import Settings
from guardian.app.settings.slack import SlackSettings
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    GroupEvaluation,
    TransitionKind,
)
from guardian_common.errors import ConfigError, PermanentError

logger = logging.getLogger(__name__)


class _Service(Protocol):
    def start(self) -> None: ...


class ControllerParts:
    """Builds, wires and shuts down remediation and Slack for one engine."""

    def __init__(
        self,
        settings: Settings,
        engine: RuleEngine,
        *,
        env: Mapping[str, str],
        clock: Callable[[], float],
        range_query: RangeQuery | None = None,
    ) -> None:
        self.remediation: RemediationParts | None = None
        self.notifier: SlackNotifier | None = None
        self.alertmanager: AlertmanagerParts | None = None
        self.interactivity: Interactivity | None = None
        self.settings = settings
        self._env = env
        self._clock = clock
        self._range_query = range_query  # Prometheus's query_range: the evidence pictures
        self._engine = engine
        # Groups whose firing alerts this replica's notifier has caught up with as leader;
        # a standby records nothing, and a replica that loses the Lease exits.
        self._caught_up: set[str] = set()
        self._ledger: Ledger | None = None
        # The price table as a series for the dashboards, as the settings stand (reloads).
        register_prices(
            engine.metrics.registry,
            lambda: self.settings.prices.table(),
            lambda expr, ts: engine.query(expr, ts),
            clock,
        )
        store = engine.store
        if store is None:
            return
        self._ledger = Ledger.attach(store.db)
        if settings.remediation.enabled:
            self.remediation = _build_remediation(settings, engine, store.db, env, clock)
            engine.listeners.append(self.remediation.loop.on_evaluation)
        if settings.slack is not None and settings.slack.enabled:
            self._wire_slack(settings.slack, engine, store.db, clock)
        self._wire_alertmanager(settings, engine)

    def _wire_slack(
        self, slack: SlackSettings, engine: RuleEngine, db: Database, clock: Callable[[], float]
    ) -> None:
        """The notifier inside the engine's transaction, and the buttons if asked for."""
        remediation = self.remediation
        # Owner details and mentions need the cluster, which remediation reads anyway.
        lookup = OwnerLookup(remediation.loop.reader) if remediation is not None else None
        self.notifier = SlackNotifier.from_settings(
            slack,
            db,
            clock,
            self._env,
            NotifierLinks(
                registry=engine.metrics.registry,
                context=lookup,
                # The shared episode state: each episode's parent message across leaders.
                handover=remediation.journal if remediation is not None else None,
                may_send=remediation.may_write if remediation is not None else None,
                range_query=self._range_query,
            ),
        )
        engine.transaction_hooks.append(self._prepare)
        engine.listeners.append(self._after_evaluation)
        if not slack.interactivity.enabled:
            return
        if remediation is None:
            raise ConfigError(
                "buttons act through remediation: enable it or turn buttons off",
                field="slack.interactivity.enabled",
            )
        self.interactivity = build_interactivity(
            slack, self.notifier, remediation, self._env, clock
        )

    def _wire_alertmanager(self, settings: Settings, engine: RuleEngine) -> None:
        """Alerts out before the cycle runs, so it finds them in Alertmanager; silences in."""
        am = build_alertmanager(
            settings, engine, is_leader=self.is_leader, registry=engine.metrics.registry
        )
        self.alertmanager = am
        if am is None:
            return
        if am.output is not None:
            engine.listeners.insert(0, am.output.on_evaluation)
        if self.remediation is not None:
            self.remediation.loop.suppressions = am.gatherer

    def is_leader(self) -> bool:
        elector = self.remediation.elector if self.remediation is not None else None
        return elector is None or elector.is_leader()

    def _prepare(self, evaluation: GroupEvaluation) -> AbstractContextManager[TransactionWriter]:
        if self.notifier is None or not self.is_leader():
            return nullcontext(_write_nothing)
        return self.notifier.prepare(evaluation.transitions)

    def _after_evaluation(self, evaluation: GroupEvaluation) -> None:
        if self.notifier is None or not self.is_leader():
            return
        if evaluation.group not in self._caught_up:  # the first evaluation as the leader
            self._caught_up.add(evaluation.group)
            self.notifier.catch_up_firing(firing_now(self._engine, evaluation))
        if self.remediation is not None:
            self.notifier.poll_remediation(self.remediation.ledger)
        self.notifier.wake()

    def start(self, on_leadership_lost: Callable[[], None]) -> None:
        if self.remediation is not None:
            self.remediation.start_leader_election(on_lost=on_leadership_lost)
        services: tuple[_Service | None, ...] = (
            self.notifier,
            self.interactivity,
            self.alertmanager,
        )
        for service in services:
            if service is not None:
                service.start()

    def prepare_reload(
        self, settings: Settings, groups: Sequence[CompiledGroup]
    ) -> Callable[[], None]:
        """Check what ``settings`` (with the reloaded rule ``groups``) change here; returns
        what applies it. Raises ConfigError (invalid policy files, no Slack token): then
        nothing changes. Changes that need a restart are logged and left alone."""
        steps: list[Callable[[], None]] = []
        if self.remediation is not None:
            steps.append(_prepare_remediation(self.remediation, settings, groups))
        slack = settings.slack
        changed = slack != self.settings.slack
        if self.notifier is not None and slack is not None and slack.enabled and changed:
            notifier = self.notifier
            transport = build_transport(slack, self._env)
            steps.append(lambda: notifier.reconfigure(slack, transport))
        for name in _restart_only(self.settings, settings):
            logger.warning("reload: %s changed; it applies after a restart", name)

        def apply() -> None:
            for step in steps:
                step()
            self.settings = settings

        return apply

    def status(self) -> dict[str, Any]:
        """``guardian status`` as JSON: active alerts, pending ladder steps, reclaimed
        workloads, from the state every replica reads."""
        if self._ledger is None:
            return StatusReport().to_json()
        episodes = self.remediation.shared_episodes() if self.remediation is not None else None
        return build_status(self._ledger, episodes).to_json()

    def explain(self, target: str, at: float | None) -> dict[str, Any]:
        """``guardian explain`` as JSON, from the leader's view of the workload now (any
        replica can plan it; only the leader acts), or the ledger's before ``at``."""
        if self.remediation is None:
            raise PermanentError("remediation is not enabled: nothing is decided here")
        with api_access(self.remediation.rest.api_client):
            return explain(self.remediation.loop, target, self._clock(), at)

    def close(self) -> None:
        if self.alertmanager is not None:
            self.alertmanager.close()
        if self.interactivity is not None:
            self.interactivity.stop()
        if self.notifier is not None:
            self.notifier.stop()
        if self.remediation is not None:
            self.remediation.close()


def _build_remediation(
    settings: Settings,
    engine: RuleEngine,
    db: Database,
    env: Mapping[str, str],
    clock: Callable[[], float],
) -> RemediationParts:
    """The ladder on the engine's alerts; credentials that load but cannot be used fail
    the start, in one line."""
    remediation = build_remediation(
        settings.remediation,
        db,
        EngineSide(engine_alerts(engine), pipeline_group_names(engine.groups), engine.ready, clock),
        ClusterAccess(
            env=env,
            default_cluster=settings.external_labels.get("cluster", ""),
            # Through the engine's current querier (a reload may replace it).
            source_clusters=served_clusters(lambda expr, ts: engine.query(expr, ts)),
            source_identities=served_identities(lambda expr, ts: engine.query(expr, ts)),
        ),
        RemediationMetrics(engine.metrics.registry),
    )
    with api_access(remediation.rest.api_client):
        remediation.loop.reader.namespace(settings.remediation.controller_namespace)
        remediation.loop.clusters.uids.learn_own()  # this cluster's UID (kube-system's)
    return remediation


def _prepare_remediation(
    parts: RemediationParts, settings: Settings, groups: Sequence[CompiledGroup]
) -> Callable[[], None]:
    r = settings.remediation
    policies = load_policies(r.policy_files)
    loop = parts.loop
    planner = replace(
        loop.planner,
        dry_run=r.dry_run,
        kill_switch=r.kill_switch,
        max_actions_per_cycle=r.max_actions_per_cycle,
        max_health_age=r.max_health_age,
        pipeline_groups=pipeline_group_names(groups),
    )

    def apply() -> None:
        loop.replace_policies(policies)
        # Attribute swaps: a cycle runs with the old switches or the new, each whole.
        loop.planner = planner
        loop.cycle_interval = r.cycle_interval

    return apply


def firing_now(engine: RuleEngine, evaluation: GroupEvaluation) -> list[AlertTransition]:
    """The group's alerts firing after ``evaluation``, as the transitions a notifier that
    missed them would have seen."""
    evidence = Evidence(EvaluationHealth.OK, evaluation.ts, "")
    return [
        AlertTransition(
            TransitionKind.FIRING,
            AlertState.FIRING,
            a.group,
            a.rule,
            a.alert.labels,
            a.alert.annotations,
            a.alert.value,
            a.alert.active_at,
            evaluation.ts,
            evidence,
            fired_at=a.alert.fired_at,
        )
        for a in engine.active_alerts()
        if a.group == evaluation.group and a.alert.state is AlertState.FIRING
    ]


def _write_nothing(_conn: sqlite3.Connection) -> None:
    return None


def _restart_only(old: Settings, new: Settings) -> list[str]:
    """The changed settings that this process reads only at start."""
    pairs: list[tuple[str, object, object]] = [
        ("state_path", old.state_path, new.state_path),
        ("listen_address", old.listen_address, new.listen_address),
        ("slack (turning it on or off)", _slack_on(old), _slack_on(new)),
        ("alertmanager", old.alertmanager, new.alertmanager),
        ("alerts", old.alerts, new.alerts),
    ]
    if new.alertmanager is not None:  # what the alerts sent to Alertmanager carry
        pairs += [
            ("external_labels (for Alertmanager)", old.external_labels, new.external_labels),
            ("external_url (for Alertmanager)", old.external_url, new.external_url),
        ]
    a, b = old.remediation, new.remediation
    pairs += [
        (f"remediation.{name}", getattr(a, name), getattr(b, name))
        for name in (
            "enabled",
            "kubeconfig",
            "api_timeout",
            "controller_namespace",
            "leader_election",
        )
    ]
    return [name for name, before, after in pairs if before != after]


def _slack_on(settings: Settings) -> bool:
    return settings.slack is not None and settings.slack.enabled
