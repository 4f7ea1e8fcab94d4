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
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext

from guardian.app.notify import SlackNotifier
from guardian.app.notify.owner_context import OwnerLookup
from guardian.app.remediation.build import (
    RemediationParts,
    build_remediation,
    engine_alerts,
    pipeline_group_names,
)
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.policy_files import load_policies
from guardian.app.rules.runtime import RuleEngine, TransactionWriter
from guardian.app.settings.config_file import Settings
from guardian.model.alerts import GroupEvaluation
from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)


class ControllerParts:
    """Builds, wires and shuts down remediation and Slack for one engine."""

    def __init__(
        self,
        settings: Settings,
        engine: RuleEngine,
        *,
        env: Mapping[str, str],
        clock: Callable[[], float],
    ) -> None:
        self.remediation: RemediationParts | None = None
        self.notifier: SlackNotifier | None = None
        store = engine.store
        if store is None:
            return
        if settings.remediation.enabled:
            self.remediation = build_remediation(
                settings.remediation,
                db=store.db,
                alerts=engine_alerts(engine),
                pipeline_groups=pipeline_group_names(engine.groups),
                metrics=RemediationMetrics(engine.metrics.registry),
                ready=engine.ready,
            )
            engine.listeners.append(self.remediation.loop.on_evaluation)
        if settings.slack is not None and settings.slack.enabled:
            # Owner details and mentions need the cluster, which remediation reads anyway.
            lookup = (
                OwnerLookup(self.remediation.loop.reader) if self.remediation is not None else None
            )
            # The shared episode state carries each episode's parent message across leaders.
            remediation = self.remediation
            self.notifier = SlackNotifier.from_settings(
                settings.slack,
                store.db,
                clock,
                env,
                registry=engine.metrics.registry,
                context=lookup,
                handover=remediation.journal if remediation is not None else None,
                may_send=remediation.may_write if remediation is not None else None,
            )
            engine.transaction_hooks.append(self._prepare)
            engine.listeners.append(self._after_evaluation)

    def is_leader(self) -> bool:
        elector = self.remediation.elector if self.remediation is not None else None
        return elector is None or elector.is_leader()

    def _prepare(self, evaluation: GroupEvaluation) -> AbstractContextManager[TransactionWriter]:
        if self.notifier is None or not self.is_leader():
            return nullcontext(_write_nothing)
        return self.notifier.prepare(evaluation.transitions)

    def _after_evaluation(self, _evaluation: GroupEvaluation) -> None:
        if self.notifier is None or not self.is_leader():
            return
        if self.remediation is not None:
            self.notifier.poll_remediation(self.remediation.ledger)
        self.notifier.wake()

    def start(self, on_leadership_lost: Callable[[], None]) -> None:
        if self.remediation is not None:
            self.remediation.start_leader_election(on_lost=on_leadership_lost)
        if self.notifier is not None:
            self.notifier.start()

    def reload(self, settings: Settings) -> None:
        """Pick up edited policy files; building new clients needs a restart."""
        if self.remediation is None:
            return
        try:
            policies = load_policies(settings.remediation.policy_files)
        except ConfigError as exc:
            logger.error("reload: keeping the running policies; the new ones are invalid:\n%s", exc)
            return
        self.remediation.loop.replace_policies(policies)

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.stop()
        if self.remediation is not None:
            self.remediation.close()


def _write_nothing(_conn: sqlite3.Connection) -> None:
    return None
