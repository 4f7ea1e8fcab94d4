"""Sends the engine's alerts to Alertmanager after each group evaluation (an engine
listener, as Prometheus's ``Group.Eval`` calls ``sendAlerts`` after each successful rule
evaluation): gather the group's alert maps, plan the sends (pure,
``guardian/engine/alertmanager/sending.py``), enqueue them (never waits for the network).

Only the leader sends, as only it writes ``ALERTS`` and acts: a replica that takes over
sends every firing alert at its first evaluation (nothing sent yet), well within the four
resend delays Alertmanager keeps an alert.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from guardian.adapters.alert_queue import NotificationQueue
from guardian.app.rules.runtime import RuleEngine
from guardian.engine.alertmanager.sending import (
    AlertKey,
    RuleAlerts,
    SendSettings,
    SentRecord,
    plan_sends,
)
from guardian.engine.rules.compiled import CompiledAlertingRule
from guardian.model.alerts import GroupEvaluation

logger = logging.getLogger(__name__)


def evaluated_expr(rule: CompiledAlertingRule) -> str:
    """The expression text the engine queries for ``rule`` (``group_eval.evaluate_group``):
    as Prometheus prints it, which is also what it puts in generatorURL
    (``r.vector.String()``). The one place that says so: a test keeps it equal to what the
    engine evaluates."""
    return rule.query


class AlertmanagerOutput:
    def __init__(
        self,
        engine: RuleEngine,
        queue: NotificationQueue,
        settings: SendSettings,
        *,
        is_leader: Callable[[], bool] = lambda: True,
    ) -> None:
        self.engine = engine
        self.queue = queue
        self.settings = settings
        self.is_leader = is_leader
        self._sent: dict[str, dict[AlertKey, SentRecord]] = {}  # per group key
        self._lock = threading.Lock()

    def on_evaluation(self, evaluation: GroupEvaluation) -> None:
        """The engine's listener: queue what this evaluation makes due."""
        if not self.is_leader():
            return
        key = f"{evaluation.file};{evaluation.group}"
        try:
            runtime = self.engine.runtime(key)
        except KeyError:
            return  # removed by a reload meanwhile
        compiled = runtime.compiled
        if len(compiled.rules) != len(evaluation.outcomes):
            return  # the group changed under a reload: its next evaluation sends
        rules = [
            RuleAlerts(rule_key, evaluated_expr(rule), runtime.state.get(rule_key, {}))
            for (rule_key, rule), outcome in zip(compiled.rules, evaluation.outcomes, strict=True)
            if outcome.health.actionable  # as Prometheus: only after a successful Eval
        ]
        with self._lock:
            previous = self._sent.get(key, {})
            alerts, records = plan_sends(
                rules, previous, evaluation.ts, compiled.interval_seconds, self.settings
            )
            kept = {k for k, _ in compiled.rules} - {r.key for r in rules}
            records.update({k: v for k, v in previous.items() if k[0] in kept})
            self._sent[key] = records
        if alerts:
            logger.debug("group %s: %s alert(s) to Alertmanager", evaluation.group, len(alerts))
            self.queue.send(alerts)
