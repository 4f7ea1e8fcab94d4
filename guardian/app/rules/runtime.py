"""The running rule engine: group state, persistence, remote write, transition listeners.

Per group evaluation: query and decide (pure engine), prepare the transaction hooks
(they may read the network), commit the new state and the hooks' rows in one
transaction (SQL only), then remote-write ``ALERTS``/``ALERTS_FOR_STATE`` and hand the
transitions to listeners. A remote-write or listener failure is logged and counted and
never changes alert state; a hook's failure fails the evaluation before anything is
committed (the next one starts from the old state).

For-state after a restart (``guardian/engine/rules/restart_restore.py``): the local cache is
resumed before a group's first evaluation; the groups of the first load then restore
from ``ALERTS_FOR_STATE`` in Prometheus after their second evaluation, before it is
committed, and write no series until then, as Prometheus's ``Group.run``.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from guardian.adapters.alert_store import StoredGroup
from guardian.app.rules.engine_setup import EngineSinks, EvaluationSetup, RestoreSetup
from guardian.app.rules.metrics import EngineMetrics
from guardian.app.rules.restart_restore_gather import MAX_ATTEMPTS, PendingRestore
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.engine.rules.group_eval import (
    CompiledGroup,
    GroupEvalOptions,
    evaluate_group,
)
from guardian.engine.rules.restart_restore import restore_for_state, series_sample
from guardian.engine.rules.sharding import QueryFn
from guardian.model.alerts import Alert, AlertState, GroupEvaluation
from guardian.model.labels import LabelSet
from guardian.model.series import TimeSeries
from guardian_common.errors import GuardianError, TransientError

logger = logging.getLogger(__name__)


@dataclass
class GroupRuntime:
    compiled: CompiledGroup
    state: dict[str, dict[LabelSet, Alert]] = field(default_factory=dict)
    last_ts: float | None = None
    stored: StoredGroup | None = None  # awaiting for-state restoration at first evaluation
    pending_restore: PendingRestore | None = None  # awaiting restore from Prometheus
    written: list[TimeSeries] = field(default_factory=list)
    # The state as last committed by this process: the store then writes only changes.
    persisted: dict[str, dict[LabelSet, Alert]] | None = None
    evaluations: int = 0
    counts: tuple[int, int] = (0, 0)  # (pending, firing) after the last evaluation
    last: GroupEvaluation | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def _counts(state: dict[str, dict[LabelSet, Alert]]) -> tuple[int, int]:
    pending = firing = 0
    for alerts in state.values():
        for alert in alerts.values():
            if alert.state is AlertState.FIRING:
                firing += 1
            elif alert.state is AlertState.PENDING:
                pending += 1
    return pending, firing


def _reloaded(previous: GroupRuntime, compiled: CompiledGroup) -> GroupRuntime:
    """``previous`` for the reloaded ``compiled``: everything carries over (a new field
    too) but the state of rules that went, the store's copy and the lock."""
    with previous.lock:
        keys = {k for k, _ in compiled.rules}
        state = {k: v for k, v in previous.state.items() if k in keys}
        return replace(
            previous,
            compiled=compiled,
            state=state,
            persisted=None,  # rules may have gone: rewrite the group
            counts=_counts(state),
            lock=threading.Lock(),
        )


@dataclass(frozen=True)
class ActiveAlert:
    group: str
    rule: str
    alert: Alert


class RuleEngine:
    """Built from the records of app/rules/engine_setup.py; their parts stay attributes of
    their own, as a reload replaces them one by one (app/runner.py)."""

    def __init__(
        self,
        groups: Sequence[CompiledGroup],
        query: QueryFn,
        *,
        metrics: EngineMetrics | None = None,
        evaluation: EvaluationSetup | None = None,
        restore: RestoreSetup | None = None,
        sinks: EngineSinks | None = None,
    ) -> None:
        evaluation = evaluation or EvaluationSetup()
        restore = restore or RestoreSetup()
        sinks = sinks or EngineSinks()
        self.query = query
        self.metrics = metrics or EngineMetrics()
        self.env = evaluation.env
        self.evaluator = evaluation.evaluator
        self.fan_out = evaluation.fan_out
        self.sharding = evaluation.sharding
        self._monotonic = evaluation.monotonic
        self.restore_policy = restore.policy
        self.prometheus_restore = restore.from_prometheus
        self._clock = restore.clock
        self.store = sinks.store
        self.remote_write = sinks.remote_write
        self.listeners = list(sinks.listeners)
        self.transaction_hooks = list(sinks.transaction_hooks)
        self.may_write = sinks.may_write
        self._groups: dict[str, GroupRuntime] = {}
        self._lock = threading.Lock()
        self.replace_groups(groups)
        if self.prometheus_restore is not None:
            for runtime in self._groups.values():
                runtime.pending_restore = PendingRestore()

    # ------------------------------------------------------------------ groups
    @property
    def groups(self) -> list[CompiledGroup]:
        with self._lock:
            return [g.compiled for g in self._groups.values()]

    def runtime(self, group_key: str) -> GroupRuntime:
        with self._lock:
            return self._groups[group_key]

    def replace_groups(self, groups: Sequence[CompiledGroup]) -> None:
        """Install ``groups``; groups and rules that stay keep their state (as a reload)."""
        with self._lock:
            old = self._groups
            new: dict[str, GroupRuntime] = {}
            for compiled in groups:
                previous = old.get(compiled.key)
                new[compiled.key] = (
                    GroupRuntime(compiled) if previous is None else _reloaded(previous, compiled)
                )
            self._groups = new
        if self.store is not None:
            self.store.forget_groups_except(set(new))

    def load_state(self) -> int:
        """Read each group's stored state; it is restored at the group's next evaluation.
        Returns the number of groups found in the store."""
        if self.store is None:
            return 0
        found = 0
        for runtime in list(self._groups.values()):
            stored = self.store.load_group(runtime.compiled.key)
            if stored is None:
                continue
            found += 1
            with runtime.lock:
                runtime.stored = stored
                runtime.last_ts = stored.last_eval_ts
                if runtime.pending_restore is not None:
                    runtime.pending_restore.cache_down_at = stored.last_eval_ts
        return found

    # ------------------------------------------------------------------ evaluation
    def _restore(self, runtime: GroupRuntime, ts: float) -> None:
        stored = runtime.stored
        if stored is None:
            return
        runtime.stored = None
        rules = dict(runtime.compiled.rules)
        runtime.state = {
            key: restore_for_state(
                rules[key].rule,
                active,
                down_at=stored.last_eval_ts,
                now=ts,
                policy=self.restore_policy,
            )
            for key, active in stored.rules.items()
            if key in rules
        }
        logger.info(
            "group %s: restored %s alert(s) stored at %.3f",
            runtime.compiled.name,
            sum(len(a) for a in runtime.state.values()),
            stored.last_eval_ts,
        )

    def evaluate(self, group_key: str, ts: float, *, persist: bool = True) -> GroupEvaluation:
        """Evaluate one group at slot ``ts``. ``persist=False`` neither stores, writes nor
        notifies (``guardian eval``)."""
        runtime = self.runtime(group_key)
        with runtime.lock:
            started = self._monotonic()
            self._restore(runtime, ts)
            if self.evaluator is not None:
                state, evaluation = self.evaluator(runtime.compiled, runtime.state, ts)
            else:
                options = GroupEvalOptions(
                    env=self.env,
                    monotonic=self._monotonic,
                    fan_out=self.fan_out,
                    sharding=self.sharding,
                )
                state, evaluation = evaluate_group(
                    runtime.compiled, runtime.state, ts, self.query, options
                )
            restoring = persist and runtime.pending_restore is not None
            if restoring:
                state = self._restore_from_prometheus(runtime, state)
            if persist and self.store is not None:
                self._save(runtime, ts, state, evaluation)
            runtime.state = state
            runtime.counts = _counts(state)
            runtime.last_ts = ts
            runtime.evaluations += 1
            runtime.last = evaluation
            if persist and not restoring and self.may_write():
                self._remote_write(runtime, ts)
            self.metrics.observe_group(evaluation, self._monotonic() - started)
        self._count_alerts()
        if persist:
            self._notify(evaluation)
        return evaluation

    def _restore_from_prometheus(
        self, runtime: GroupRuntime, state: dict[str, dict[LabelSet, Alert]]
    ) -> dict[str, dict[LabelSet, Alert]]:
        pending = runtime.pending_restore
        if pending is None or self.prometheus_restore is None:
            return state
        pending.evaluations += 1
        if pending.evaluations < 2:
            return state  # as Prometheus: after the second evaluation
        name = runtime.compiled.name
        try:
            state = self.prometheus_restore.restore(
                runtime.compiled, state, now=self._clock(), cache_down_at=pending.cache_down_at
            )
        except Exception as exc:  # per group: a restore must never stop evaluations
            pending.attempts += 1
            self.metrics.for_state_restore_failures.labels(name).inc()
            if isinstance(exc, TransientError) and pending.attempts < MAX_ATTEMPTS:
                logger.warning(
                    "group %s: cannot read ALERTS_FOR_STATE (%s); trying again after the "
                    "next evaluation",
                    name,
                    exc,
                )
                return state
            if not isinstance(exc, GuardianError):
                logger.exception("group %s: for-state restore failed", name)
            logger.error(
                "group %s: for-state not restored from Prometheus (%s); pending alerts keep "
                "what the local cache gave them, or start over",
                name,
                exc,
            )
        runtime.pending_restore = None
        return state

    def _save(
        self,
        runtime: GroupRuntime,
        ts: float,
        state: dict[str, dict[LabelSet, Alert]],
        evaluation: GroupEvaluation,
    ) -> None:
        if self.store is None:
            return
        with ExitStack() as prepared:
            writers = [prepared.enter_context(hook(evaluation)) for hook in self.transaction_hooks]

            def extra(conn: sqlite3.Connection) -> None:
                for write in writers:
                    write(conn)

            self.store.save_group(
                runtime.compiled.key,
                ts,
                state,
                previous=runtime.persisted,
                extra=extra if writers else None,
            )
        runtime.persisted = state

    def _remote_write(self, runtime: GroupRuntime, ts: float) -> None:
        if self.remote_write is None:
            return
        ts_ms = round(ts * 1000)
        rules = dict(runtime.compiled.rules)
        active = [
            series_sample(alert, rules[key].rule.labels if key in rules else {})
            for key, rule_state in runtime.state.items()
            for alert in rule_state.values()
            if alert.is_active
        ]
        current = build_alert_series(active, ts_ms)
        series = current + stale_series(runtime.written, current, ts_ms)
        try:
            if series:
                self.remote_write.write(series)
        except Exception as exc:
            self.metrics.remote_write_failures.inc()
            logger.warning("group %s: remote write failed: %s", runtime.compiled.name, exc)
            keys = {s.key for s in current}
            runtime.written = current + [s for s in runtime.written if s.key not in keys]
            return
        runtime.written = current

    def _notify(self, evaluation: GroupEvaluation) -> None:
        for listener in self.listeners:
            try:
                listener(evaluation)
            except Exception:
                logger.exception("transition listener %r failed", listener)

    def _count_alerts(self) -> None:
        # Each group's counts are kept from its last evaluation: one group's cycle costs
        # its own alerts, not the whole engine's.
        with self._lock:
            runtimes = list(self._groups.values())
        pending = sum(r.counts[0] for r in runtimes)
        firing = sum(r.counts[1] for r in runtimes)
        self.metrics.set_alert_counts(pending, firing)

    # ------------------------------------------------------------------ views
    def active_alerts(self) -> list[ActiveAlert]:
        """Pending and firing alerts of every group (what /api/v1/alerts lists)."""
        with self._lock:
            runtimes = list(self._groups.values())
        out: list[ActiveAlert] = []
        for runtime in runtimes:
            rules = dict(runtime.compiled.rules)
            for key, active in list(runtime.state.items()):
                name = rules[key].rule.name if key in rules else key
                out.extend(
                    ActiveAlert(runtime.compiled.name, name, a)
                    for a in active.values()
                    if a.is_active
                )
        return out

    def ready(self) -> bool:
        """Every group has been evaluated at least once since start."""
        with self._lock:
            return all(r.last is not None for r in self._groups.values())

    def close(self) -> None:
        for part in (self.evaluator, self.fan_out):
            close_part = getattr(part, "close", None)
            if close_part is not None:
                close_part()
        if self.remote_write is not None:
            self.remote_write.close()
        if self.store is not None:
            self.store.close()
