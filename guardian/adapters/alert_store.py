"""Durable alert state: the engine's active maps and each group's last evaluation.

One transaction per group evaluation replaces that group's rows, so after a crash the
store holds exactly the last committed evaluation of every group.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from guardian.adapters.sqlite_db import Database, MigrationSet
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet

logger = logging.getLogger(__name__)

ENGINE_MIGRATIONS = MigrationSet(
    "engine",
    (
        """
        CREATE TABLE engine_groups (
            group_key TEXT PRIMARY KEY,
            last_eval_ts REAL NOT NULL
        );
        CREATE TABLE engine_alerts (
            group_key TEXT NOT NULL,
            rule_key TEXT NOT NULL,
            labels TEXT NOT NULL,
            annotations TEXT NOT NULL,
            state TEXT NOT NULL,
            active_at REAL NOT NULL,
            fired_at REAL,
            resolved_at REAL,
            keep_firing_since REAL,
            last_value REAL,
            PRIMARY KEY (group_key, rule_key, labels)
        )
        """,
    ),
)


@dataclass(frozen=True)
class StoredGroup:
    last_eval_ts: float
    rules: dict[str, dict[LabelSet, Alert]]


def _labels_json(labels: LabelSet) -> str:
    return json.dumps(labels.items_sorted, separators=(",", ":"), ensure_ascii=False)


def _labels(text: str) -> LabelSet:
    return LabelSet(dict(json.loads(text)))


def _value(value: float) -> float | None:
    # SQLite has no NaN (it stores NULL); keep it as NULL and read back NaN.
    return None if value != value else value


def _row(group_key: str, rule_key: str, labels: LabelSet, alert: Alert) -> tuple[object, ...]:
    return (
        group_key,
        rule_key,
        _labels_json(labels),
        _labels_json(alert.annotations),
        alert.state.value,
        alert.active_at,
        alert.fired_at,
        alert.resolved_at,
        alert.keep_firing_since,
        _value(alert.value),
    )


class AlertStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, path: str, extra: list[MigrationSet] | None = None) -> AlertStore:
        return cls(Database.open(path, [ENGINE_MIGRATIONS, *(extra or [])]))

    def close(self) -> None:
        self.db.close()

    def save_group(
        self,
        group_key: str,
        ts: float,
        rules: Mapping[str, Mapping[LabelSet, Alert]],
        *,
        previous: Mapping[str, Mapping[LabelSet, Alert]] | None = None,
        extra: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """Store the group's state in one transaction; ``extra`` runs inside it. Keep it
        to SQL: the database stays locked until it returns.

        ``previous`` is the state this store last committed for the group: then only the
        alerts that changed (a new object) are written and the vanished ones deleted.
        Without it the group's rows are replaced.
        """
        upserts: list[tuple[object, ...]] = []
        deletes: list[tuple[str, str, str]] = []
        for rule_key, active in rules.items():
            before = previous.get(rule_key, {}) if previous is not None else {}
            upserts.extend(
                _row(group_key, rule_key, labels, alert)
                for labels, alert in active.items()
                if before.get(labels) is not alert
            )
        if previous is not None:
            for rule_key, active in previous.items():
                now = rules.get(rule_key, {})
                deletes.extend(
                    (group_key, rule_key, _labels_json(labels))
                    for labels in active
                    if labels not in now
                )
        with self.db.transaction() as conn:
            if previous is None:
                conn.execute("DELETE FROM engine_alerts WHERE group_key = ?", (group_key,))
            else:
                conn.executemany(
                    "DELETE FROM engine_alerts WHERE group_key = ? AND rule_key = ? AND labels = ?",
                    deletes,
                )
            conn.executemany(
                "INSERT OR REPLACE INTO engine_alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                upserts,
            )
            conn.execute(
                "INSERT INTO engine_groups (group_key, last_eval_ts) VALUES (?, ?) "
                "ON CONFLICT(group_key) DO UPDATE SET last_eval_ts = excluded.last_eval_ts",
                (group_key, ts),
            )
            if extra is not None:
                extra(conn)

    def load_group(self, group_key: str) -> StoredGroup | None:
        head = self.db.read(
            "SELECT last_eval_ts FROM engine_groups WHERE group_key = ?", (group_key,)
        )
        if not head:
            return None
        rules: dict[str, dict[LabelSet, Alert]] = {}
        for row in self.db.read(
            "SELECT rule_key, labels, annotations, state, active_at, fired_at, resolved_at, "
            "keep_firing_since, last_value FROM engine_alerts WHERE group_key = ?",
            (group_key,),
        ):
            rule_key, labels, annotations, state, active_at, fired, resolved, keep, value = row
            alert = Alert(
                labels=_labels(str(labels)),
                annotations=_labels(str(annotations)),
                state=AlertState(str(state)),
                active_at=float(str(active_at)),
                value=float("nan") if value is None else float(str(value)),
                fired_at=None if fired is None else float(str(fired)),
                resolved_at=None if resolved is None else float(str(resolved)),
                keep_firing_since=None if keep is None else float(str(keep)),
            )
            rules.setdefault(str(rule_key), {})[alert.labels] = alert
        return StoredGroup(float(str(head[0][0])), rules)

    def forget_groups_except(self, keep: set[str]) -> None:
        """Drop the state of groups no longer configured."""
        known = {str(r[0]) for r in self.db.read("SELECT group_key FROM engine_groups")}
        gone = known - keep
        if not gone:
            return
        with self.db.transaction() as conn:
            for key in gone:
                conn.execute("DELETE FROM engine_alerts WHERE group_key = ?", (key,))
                conn.execute("DELETE FROM engine_groups WHERE group_key = ?", (key,))
        logger.info("state: forgot %s group(s) no longer configured", len(gone))
