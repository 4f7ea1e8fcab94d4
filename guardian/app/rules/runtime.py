"""The running rule engine: group state, persistence, remote write, transition listeners.

Per group evaluation: query and decide (pure engine), commit the new state in one
transaction, then remote-write ``ALERTS``/``ALERTS_FOR_STATE`` and hand the
transitions to listeners. A remote-write or listener failure is logged and counted and
never changes alert state.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from guardian.adapters.alert_store import AlertStore, StoredGroup
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.app.rules.metrics import EngineMetrics
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.engine.rules.alerting import TemplateEnv
from guardian.engine.rules.for_state import RestorePolicy, restore_for_state
from guardian.engine.rules.group_eval import CompiledGroup, QueryFn, evaluate_group
from guardian.model.alerts import Alert, AlertState, GroupEvaluation
from guardian.model.labels import LabelSet
from guardian.model.series import ActiveAlertSample, TimeSeries

logger = logging.getLogger(__name__)

Listener = Callable[[GroupEvaluation], None]
# Runs inside the group's state transaction: a later component (e.g. an outbox) can
# record the transitions atomically with the state that produced them.
TransactionHook = Callable[[sqlite3.Connection, GroupEvaluation], None]


@dataclass
class GroupRuntime:
    compiled: CompiledGroup
    state: dict[str, dict[LabelSet, Alert]] = field(default_factory=dict)
    last_ts: float | None = None
    stored: StoredGroup | None = None  # awaiting for-state restoration at first evaluation
    written: list[TimeSeries] = field(default_factory=list)
    # The state as last committed by this process: the store then writes only changes.
    persisted: dict[str, dict[LabelSet, Alert]] | None = None
    evaluations: int = 0
    last: GroupEvaluation | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class ActiveAlert:
    group: str
    rule: str
    alert: Alert


class RuleEngine:
    def __init__(
        self,
        groups: Sequence[CompiledGroup],
        query: QueryFn,
        *,
        metrics: EngineMetrics | None = None,
        env: TemplateEnv | None = None,
        store: AlertStore | None = None,
        remote_write: RemoteWriteClient | None = None,
        restore_policy: RestorePolicy | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        listeners: Iterable[Listener] = (),
        transaction_hooks: Iterable[TransactionHook] = (),
    ) -> None:
        self.query = query
        self.metrics = metrics or EngineMetrics()
        self.env = env or TemplateEnv({})
        self.store = store
        self.remote_write = remote_write
        self.restore_policy = restore_policy or RestorePolicy()
        self.listeners = list(listeners)
        self.transaction_hooks = list(transaction_hooks)
        self._monotonic = monotonic
        self._groups: dict[str, GroupRuntime] = {}
        self._lock = threading.Lock()
        self.replace_groups(groups)

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
                runtime = GroupRuntime(compiled)
                if previous is not None:
                    with previous.lock:
                        keys = {k for k, _ in compiled.rules}
                        runtime.state = {k: v for k, v in previous.state.items() if k in keys}
                        runtime.persisted = None  # rules may have gone: rewrite the group
                        runtime.last_ts = previous.last_ts
                        runtime.stored = previous.stored
                        runtime.written = previous.written
                        runtime.evaluations = previous.evaluations
                        runtime.last = previous.last
                new[compiled.key] = runtime
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
            state, evaluation = evaluate_group(
                runtime.compiled,
                runtime.state,
                ts,
                self.query,
                env=self.env,
                monotonic=self._monotonic,
            )
            if persist and self.store is not None:
                self._save(runtime, ts, state, evaluation)
            runtime.state = state
            runtime.last_ts = ts
            runtime.evaluations += 1
            runtime.last = evaluation
            if persist:
                self._remote_write(runtime, ts)
            self.metrics.observe_group(evaluation, self._monotonic() - started)
        self._count_alerts()
        if persist:
            self._notify(evaluation)
        return evaluation

    def _save(
        self,
        runtime: GroupRuntime,
        ts: float,
        state: dict[str, dict[LabelSet, Alert]],
        evaluation: GroupEvaluation,
    ) -> None:
        if self.store is None:
            return
        hooks = self.transaction_hooks

        def extra(conn: sqlite3.Connection) -> None:
            for hook in hooks:
                hook(conn, evaluation)

        self.store.save_group(
            runtime.compiled.key,
            ts,
            state,
            previous=runtime.persisted,
            extra=extra if hooks else None,
        )
        runtime.persisted = state

    def _remote_write(self, runtime: GroupRuntime, ts: float) -> None:
        if self.remote_write is None:
            return
        ts_ms = round(ts * 1000)
        rules = dict(runtime.compiled.rules)
        active = [
            ActiveAlertSample(
                alert.labels,
                alert.state,
                alert.active_at,
                rules[key].rule.labels if key in rules else {},
            )
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
        pending = firing = 0
        for alert in self.active_alerts():
            if alert.alert.state is AlertState.FIRING:
                firing += 1
            else:
                pending += 1
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
        if self.remote_write is not None:
            self.remote_write.close()
        if self.store is not None:
            self.store.close()
