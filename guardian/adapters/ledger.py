"""The remediation ledger: every planned and applied step, in the shared SQLite database.

Kubernetes Events expire; this is the record. It also holds the episodes (one per
workload and idle spell) and the cursors of consumers (the Slack notifier) reading
events in order, so a restart neither repeats nor loses a step.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from guardian.adapters.sqlite_db import Database, MigrationSet, TableStore
from guardian.model.labels import LabelSet
from guardian.model.reclaim import LedgerEntry, LedgerView
from guardian.model.remediation_events import (
    HoldKind,
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.shared_episode import EpisodeState
from guardian_common.errors import PermanentError

__all__ = ["Episode", "EpisodeState", "Ledger"]

logger = logging.getLogger(__name__)

LEDGER_MIGRATIONS = MigrationSet(
    "ledger",
    (
        """
        CREATE TABLE remediation_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            episode TEXT NOT NULL,
            api_version TEXT NOT NULL,
            kind TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            step TEXT NOT NULL,
            outcome TEXT NOT NULL,
            at REAL NOT NULL,
            policy TEXT NOT NULL,
            reason TEXT NOT NULL,
            alert_labels TEXT NOT NULL,
            next_step TEXT,
            next_step_due REAL,
            original_replicas INTEGER,
            restore_command TEXT
        );
        CREATE INDEX remediation_events_episode ON remediation_events (episode);
        CREATE INDEX remediation_events_workload ON remediation_events (namespace, kind, name);
        CREATE INDEX remediation_events_at ON remediation_events (at);
        CREATE TABLE remediation_episodes (
            episode TEXT PRIMARY KEY,
            api_version TEXT NOT NULL,
            kind TEXT NOT NULL,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            policy TEXT NOT NULL,
            started_at REAL NOT NULL,
            state TEXT NOT NULL,
            ended_at REAL
        );
        CREATE TABLE remediation_cursors (
            consumer TEXT PRIMARY KEY,
            seq INTEGER NOT NULL
        )
        """,
        # What a recorded wait waits for (grace, demand, checkpoint, outage, ...).
        "ALTER TABLE remediation_events ADD COLUMN hold TEXT",
        # The outages not resumed yet are asked for every cycle: by step, not a scan.
        "CREATE INDEX remediation_events_step ON remediation_events (step, episode)",
    ),
)

_COLUMNS = (
    "seq, episode, api_version, kind, namespace, name, step, outcome, at, policy, reason, "
    "alert_labels, next_step, next_step_due, original_replicas, restore_command, hold"
)
# Steps that are not rungs of the ladder: the planner's view leaves them out.
_BETWEEN = (LadderStep.GIVE_UP, LadderStep.HOLD, LadderStep.RESUME)


@dataclass(frozen=True)
class Episode:
    episode: str
    workload: WorkloadRef
    policy: str
    started_at: float
    state: str
    ended_at: float | None


def _labels_json(labels: LabelSet) -> str:
    return json.dumps(labels.items_sorted, separators=(",", ":"), ensure_ascii=False)


def _event(row: Sequence[object]) -> RemediationEvent:
    (
        seq,
        episode,
        api,
        kind,
        ns,
        name,
        step,
        outcome,
        at,
        policy,
        reason,
        labels,
        nxt,
        due,
        original,
        command,
        hold,
    ) = row
    return RemediationEvent(
        episode=str(episode),
        workload=WorkloadRef(str(api), str(kind), str(ns), str(name)),
        step=LadderStep(str(step)),
        outcome=StepOutcome(str(outcome)),
        at=float(str(at)),
        policy=str(policy),
        reason=str(reason),
        alert_labels=LabelSet(dict(json.loads(str(labels)))),
        next_step=LadderStep(str(nxt)) if nxt is not None else None,
        next_step_due=float(str(due)) if due is not None else None,
        original_replicas=int(str(original)) if original is not None else None,
        restore_command=str(command) if command is not None else None,
        seq=int(str(seq)),
        hold=HoldKind(str(hold)) if hold in HoldKind.__members__.values() else None,
    )


def _outages(events: Sequence[RemediationEvent]) -> dict[str, tuple[float, float | None]]:
    """episode -> its last outage (held since, resumed at), from its HOLD/RESUME events."""
    out: dict[str, tuple[float, float | None]] = {}
    for e in events:
        if e.step is LadderStep.HOLD and (e.episode not in out or out[e.episode][1] is not None):
            out[e.episode] = (e.at, None)
        elif e.step is LadderStep.RESUME and e.episode in out:
            out[e.episode] = (out[e.episode][0], e.at)
    return out


class Ledger(TableStore):
    MIGRATIONS = LEDGER_MIGRATIONS

    @classmethod
    def open_existing(cls, path: str) -> Ledger:
        """The state database at ``path``, which must exist (never created)."""
        if not Path(path).exists():
            raise PermanentError(f"no state database at {path}")
        return cls.open(path)

    @classmethod
    def open(cls, path: str, extra: Sequence[MigrationSet] = ()) -> Ledger:
        return cls(Database.open(path, [LEDGER_MIGRATIONS, *extra]))

    # ---------------------------------------------------------------- writing
    def record(self, event: RemediationEvent, *, dedupe: bool = False) -> RemediationEvent | None:
        """Append ``event``; with ``dedupe``, skip it when the workload's last event has the
        same step, outcome and reason (a wait repeated every cycle). Returns it with its seq."""
        ref = event.workload
        with self.db.transaction() as conn:
            if dedupe:
                last = conn.execute(
                    "SELECT step, outcome, reason FROM remediation_events WHERE namespace = ? "
                    "AND kind = ? AND name = ? ORDER BY seq DESC LIMIT 1",
                    (ref.namespace, ref.kind, ref.name),
                ).fetchone()
                if last == (event.step.value, event.outcome.value, event.reason):
                    return None
            cursor = conn.execute(
                f"INSERT INTO remediation_events ({_COLUMNS}) "  # noqa: S608 - fixed column list
                "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.episode,
                    ref.api_version,
                    ref.kind,
                    ref.namespace,
                    ref.name,
                    event.step.value,
                    event.outcome.value,
                    event.at,
                    event.policy,
                    event.reason,
                    _labels_json(event.alert_labels),
                    event.next_step.value if event.next_step else None,
                    event.next_step_due,
                    event.original_replicas,
                    event.restore_command,
                    event.hold.value if event.hold else None,
                ),
            )
            seq = int(cursor.lastrowid or 0)
        logger.info(
            "ledger: %s %s %s on %s: %s",
            event.step,
            event.outcome,
            event.episode,
            ref,
            event.reason,
        )
        return dataclasses.replace(event, seq=seq)

    def open_episode(self, ref: WorkloadRef, episode: str, started_at: float, policy: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO remediation_episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL) "
                "ON CONFLICT(episode) DO NOTHING",
                (
                    episode,
                    ref.api_version,
                    ref.kind,
                    ref.namespace,
                    ref.name,
                    policy,
                    started_at,
                    EpisodeState.OPEN,
                ),
            )

    def set_episode_state(self, episode: str, state: str, at: float | None = None) -> None:
        ended = at if state in (EpisodeState.CLOSED, EpisodeState.RESTORED) else None
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE remediation_episodes SET state = ?, ended_at = ? WHERE episode = ?",
                (state, ended, episode),
            )

    def end_workload_episodes(self, ref: WorkloadRef, state: str, at: float) -> None:
        """A restore ends whatever episode is open on the workload."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE remediation_episodes SET state = ?, ended_at = ? WHERE namespace = ? AND "
                "kind = ? AND name = ? AND state IN (?, ?)",
                (
                    state,
                    at,
                    ref.namespace,
                    ref.kind,
                    ref.name,
                    EpisodeState.OPEN,
                    EpisodeState.RECLAIMED,
                ),
            )

    # ---------------------------------------------------------------- reading
    def episodes(self, *states: str) -> list[Episode]:
        marks = ", ".join("?" for _ in states)
        # Only "?" placeholders are interpolated.
        sql = (
            "SELECT episode, api_version, kind, namespace, name, policy, started_at, state, "  # noqa: S608
            f"ended_at FROM remediation_episodes WHERE state IN ({marks}) "
            "ORDER BY started_at, episode"
        )
        rows = self.db.read(sql, states)
        return [
            Episode(
                str(r[0]),
                WorkloadRef(str(r[1]), str(r[2]), str(r[3]), str(r[4])),
                str(r[5]),
                float(str(r[6])),
                str(r[7]),
                float(str(r[8])) if r[8] is not None else None,
            )
            for r in rows
        ]

    def view(self, now: float) -> LedgerView:
        """Open episodes with their steps, and the last hour's reclaims (for the limits)."""
        live = self.episodes(EpisodeState.OPEN, EpisodeState.RECLAIMED)
        opened = {e.workload: (e.episode, e.started_at, e.policy) for e in live}
        ids = [e.episode for e in live]
        events = self.events_for(ids)
        events += [
            e
            for e in self._query(
                "WHERE step = ? AND at >= ?", (LadderStep.RECLAIM.value, now - 3600)
            )
            if e.episode not in ids
        ]
        entries = tuple(
            LedgerEntry.of(e.episode, e.workload, e.step, e.outcome, e.at, e.policy)
            for e in events
            if e.step not in _BETWEEN
        )
        return LedgerView(opened, entries, _outages(events))

    def _query(
        self, where: str, params: Sequence[object], limit: int | None = None
    ) -> list[RemediationEvent]:
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.read(
            f"SELECT {_COLUMNS} FROM remediation_events {where} ORDER BY seq{tail}",  # noqa: S608
            params,
        )
        return [_event(r) for r in rows]

    def unresumed_holds(self) -> dict[str, RemediationEvent]:
        """episode -> the hold that began its outage, for each not resumed since."""
        held = self._query(
            "AS h WHERE h.step = ? AND NOT EXISTS (SELECT 1 FROM remediation_events AS r "
            "WHERE r.episode = h.episode AND r.step = ? AND r.seq > h.seq)",
            (LadderStep.HOLD.value, LadderStep.RESUME.value),
        )
        return {e.episode: e for e in held}  # the latest hold per episode wins

    def workload_events(self, namespace: str, kind: str, name: str) -> list[RemediationEvent]:
        """Every event about the workload, oldest first (``kind`` in any case)."""
        return self._query(
            "WHERE namespace = ? AND lower(kind) = lower(?) AND name = ?", (namespace, kind, name)
        )

    def events_for(self, episodes: Sequence[str]) -> list[RemediationEvent]:
        if not episodes:
            return []
        marks = ", ".join("?" for _ in episodes)
        return self._query(f"WHERE episode IN ({marks})", episodes)

    def events_since(self, seq: int, limit: int = 500) -> list[RemediationEvent]:
        """Events after ``seq``, oldest first: what a notifier has not consumed yet."""
        return self._query("WHERE seq > ?", (seq,), limit)

    def all_events(self) -> list[RemediationEvent]:
        return self._query("", ())

    def cursor(self, consumer: str) -> int:
        rows = self.db.read("SELECT seq FROM remediation_cursors WHERE consumer = ?", (consumer,))
        return int(str(rows[0][0])) if rows else 0

    def ack(self, consumer: str, seq: int) -> None:
        """Record that ``consumer`` handled every event up to ``seq``."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO remediation_cursors VALUES (?, ?) ON CONFLICT(consumer) "
                "DO UPDATE SET seq = MAX(seq, excluded.seq)",
                (consumer, seq),
            )

    def close(self) -> None:
        self.db.close()
