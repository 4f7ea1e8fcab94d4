"""The Slack notifier's durable state in the shared SQLite database.

- ``slack_outbox``: every message operation, keyed by an idempotency key (UNIQUE), in
  one FIFO per channel. ``pending`` → ``sending`` (committed BEFORE the call to Slack) →
  ``done`` (with the message ``ts``) or ``dead`` (Slack said it can never work).
  A row found in ``sending`` may have reached Slack: it is reconciled before a re-post.
- ``slack_threads``: per thread (one episode, or one group of episodes) the channel ID
  and parent ``ts`` once posted.
- ``slack_episodes``: each episode's current finding, its thread and reminder state.
- ``slack_cursors``: how far a feed (the remediation ledger) has been consumed.
- ``slack_seen``: every change (transition or ladder event) already applied, so a replay
  after a restart changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from guardian.adapters.sqlite_db import Database, MigrationSet
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, finding_from_dict, finding_to_dict

SLACK_MIGRATIONS = MigrationSet(
    "slack",
    (
        """
        CREATE TABLE slack_outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            idem_key TEXT NOT NULL UNIQUE,
            channel TEXT NOT NULL,
            thread_key TEXT NOT NULL,
            op TEXT NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            not_before REAL NOT NULL,
            created_at REAL NOT NULL,
            first_attempt_at REAL,
            done_at REAL,
            result_ts TEXT,
            last_error TEXT
        );
        CREATE INDEX slack_outbox_queue ON slack_outbox (state, channel, seq);
        CREATE TABLE slack_threads (
            thread_key TEXT PRIMARY KEY,
            channel TEXT NOT NULL,
            channel_id TEXT,
            ts TEXT,
            kind TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE slack_episodes (
            episode TEXT PRIMARY KEY,
            thread_key TEXT NOT NULL,
            finding TEXT NOT NULL,
            announced INTEGER NOT NULL,
            dirty INTEGER NOT NULL DEFAULT 0,
            last_notified_at REAL NOT NULL,
            reminders INTEGER NOT NULL DEFAULT 0,
            is_open INTEGER NOT NULL
        );
        CREATE INDEX slack_episodes_thread ON slack_episodes (thread_key);
        CREATE TABLE slack_cursors (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE slack_seen (
            change_key TEXT PRIMARY KEY,
            seen_at REAL NOT NULL
        )
        """,
        # The ledger keys its episodes by workload, the engine by alert: remediation
        # events find their alert's episode by its labels (or rule, namespace and pod).
        """
        ALTER TABLE slack_episodes ADD COLUMN labels_key TEXT;
        ALTER TABLE slack_episodes ADD COLUMN pod_key TEXT;
        ALTER TABLE slack_episodes ADD COLUMN active_at REAL;
        CREATE INDEX slack_episodes_labels ON slack_episodes (labels_key);
        CREATE INDEX slack_episodes_pod ON slack_episodes (pod_key);
        CREATE TABLE slack_aliases (
            remediation_episode TEXT PRIMARY KEY,
            episode TEXT NOT NULL
        )
        """,
    ),
)

PENDING, SENDING, DONE, DEAD = "pending", "sending", "done", "dead"


@dataclass(frozen=True)
class OutboxItem:
    seq: int
    idem: str
    channel: str
    thread: str
    op: str
    payload: dict[str, Any]
    state: str
    attempts: int
    not_before: float
    first_attempt_at: float | None


@dataclass(frozen=True)
class ThreadRow:
    key: str
    channel: str
    channel_id: str | None
    ts: str | None
    kind: str


@dataclass(frozen=True)
class EpisodeRow:
    episode: str
    thread: str
    finding: Finding
    announced: bool
    dirty: bool
    last_notified_at: float
    reminders: int


def labels_key(labels: LabelSet) -> str | None:
    return json.dumps(labels.items_sorted, separators=(",", ":")) if labels else None


def pod_key(labels: LabelSet) -> str | None:
    parts = [labels.get(k) for k in ("alertname", "namespace", "pod")]
    return "\x00".join(p for p in parts if p) if all(parts) else None


def _f(value: object) -> float:
    return float(str(value))


class SlackStore:
    """Queries over the notifier's tables. Methods taking ``conn`` run inside the caller's
    transaction (``db.transaction()``), so state and outbox change together."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.migrate([SLACK_MIGRATIONS])

    # -------------------------------------------------------------- episodes
    def episode(self, conn: sqlite3.Connection, episode: str) -> EpisodeRow | None:
        row = conn.execute(
            "SELECT episode, thread_key, finding, announced, dirty, last_notified_at, reminders "
            "FROM slack_episodes WHERE episode = ?",
            (episode,),
        ).fetchone()
        return None if row is None else self._episode(row)

    @staticmethod
    def _episode(row: tuple[Any, ...]) -> EpisodeRow:
        ep, thread, finding, announced, dirty, last, reminders = row
        return EpisodeRow(
            str(ep),
            str(thread),
            finding_from_dict(json.loads(finding)),
            bool(announced),
            bool(dirty),
            _f(last),
            int(reminders),
        )

    def save_episode(self, conn: sqlite3.Connection, row: EpisodeRow) -> None:
        conn.execute(
            "INSERT INTO slack_episodes (episode, thread_key, finding, announced, dirty, "
            "last_notified_at, reminders, is_open, labels_key, pod_key, active_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(episode) DO UPDATE SET thread_key = excluded.thread_key, "
            "finding = excluded.finding, announced = excluded.announced, dirty = excluded.dirty, "
            "last_notified_at = excluded.last_notified_at, reminders = excluded.reminders, "
            "is_open = excluded.is_open",
            (
                row.episode,
                row.thread,
                json.dumps(finding_to_dict(row.finding), separators=(",", ":")),
                int(row.announced),
                int(row.dirty),
                row.last_notified_at,
                row.reminders,
                int(row.finding.open),
                labels_key(row.finding.labels),
                pod_key(row.finding.labels),
                row.finding.active_at,
            ),
        )

    def alias(self, conn: sqlite3.Connection, remediation_episode: str) -> str | None:
        row = conn.execute(
            "SELECT episode FROM slack_aliases WHERE remediation_episode = ?",
            (remediation_episode,),
        ).fetchone()
        return None if row is None else str(row[0])

    def set_alias(self, conn: sqlite3.Connection, remediation_episode: str, episode: str) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO slack_aliases (remediation_episode, episode) VALUES (?, ?)",
            (remediation_episode, episode),
        )

    def match_alert(self, conn: sqlite3.Connection, labels: LabelSet) -> str | None:
        """The newest alert episode with these labels (else the same rule, namespace and
        pod) that no other remediation episode has claimed."""
        for column, key in (("labels_key", labels_key(labels)), ("pod_key", pod_key(labels))):
            if key is None:
                continue
            row = conn.execute(
                f"SELECT episode FROM slack_episodes e WHERE {column} = ? "  # noqa: S608 - fixed names
                "AND NOT EXISTS (SELECT 1 FROM slack_aliases a WHERE a.episode = e.episode) "
                "ORDER BY active_at DESC LIMIT 1",
                (key,),
            ).fetchone()
            if row is not None:
                return str(row[0])
        return None

    def members(self, conn: sqlite3.Connection, thread: str) -> list[Finding]:
        rows = conn.execute(
            "SELECT finding FROM slack_episodes WHERE thread_key = ? ORDER BY episode", (thread,)
        ).fetchall()
        return [finding_from_dict(json.loads(r[0])) for r in rows]

    def reminder_candidates(self, conn: sqlite3.Connection) -> list[EpisodeRow]:
        rows = conn.execute(
            "SELECT episode, thread_key, finding, announced, dirty, last_notified_at, reminders "
            "FROM slack_episodes WHERE is_open = 1 OR dirty = 1 ORDER BY episode"
        ).fetchall()
        return [self._episode(r) for r in rows]

    # -------------------------------------------------------------- threads
    def thread(self, key: str, conn: sqlite3.Connection | None = None) -> ThreadRow | None:
        sql = (
            "SELECT thread_key, channel, channel_id, ts, kind FROM slack_threads "
            "WHERE thread_key = ?"
        )
        if conn is not None:
            row = conn.execute(sql, (key,)).fetchone()
        else:
            rows = self.db.read(sql, (key,))
            row = rows[0] if rows else None
        if row is None:
            return None
        k, channel, cid, ts, kind = row
        return ThreadRow(
            str(k),
            str(channel),
            None if cid is None else str(cid),
            None if ts is None else str(ts),
            str(kind),
        )

    def known_channel_id(self, channel: str) -> str | None:
        """The ID Slack answered for a configured channel name, from an earlier post."""
        rows = self.db.read(
            "SELECT channel_id FROM slack_threads WHERE channel = ? AND channel_id IS NOT NULL "
            "LIMIT 1",
            (channel,),
        )
        return str(rows[0][0]) if rows else None

    def ensure_thread(
        self, conn: sqlite3.Connection, key: str, channel: str, kind: str, now: float
    ) -> ThreadRow:
        conn.execute(
            "INSERT OR IGNORE INTO slack_threads (thread_key, channel, kind, created_at) "
            "VALUES (?, ?, ?, ?)",
            (key, channel, kind, now),
        )
        row = self.thread(key, conn)
        assert row is not None  # noqa: S101 - inserted just above
        return row

    # -------------------------------------------------------------- outbox writes
    def has_idem(self, conn: sqlite3.Connection, idem: str) -> bool:
        return (
            conn.execute("SELECT 1 FROM slack_outbox WHERE idem_key = ?", (idem,)).fetchone()
            is not None
        )

    def enqueue(
        self,
        conn: sqlite3.Connection,
        *,
        idem: str,
        channel: str,
        thread: str,
        op: str,
        payload: dict[str, Any],
        now: float,
    ) -> bool:
        """Add one operation; ``False`` if its idempotency key is already there."""
        cur = conn.execute(
            "INSERT OR IGNORE INTO slack_outbox (idem_key, channel, thread_key, op, payload, "
            "state, not_before, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                idem,
                channel,
                thread,
                op,
                json.dumps(payload, separators=(",", ":")),
                PENDING,
                now,
                now,
            ),
        )
        return cur.rowcount == 1

    def seen(self, conn: sqlite3.Connection, key: str, now: float) -> bool:
        """Record ``key``; ``True`` if it was there already."""
        cur = conn.execute(
            "INSERT OR IGNORE INTO slack_seen (change_key, seen_at) VALUES (?, ?)", (key, now)
        )
        return cur.rowcount == 0

    def get_cursor(self, name: str) -> str | None:
        rows = self.db.read("SELECT value FROM slack_cursors WHERE name = ?", (name,))
        return str(rows[0][0]) if rows else None

    def set_cursor(self, conn: sqlite3.Connection, name: str, value: str) -> None:
        conn.execute(
            "INSERT INTO slack_cursors (name, value) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    # -------------------------------------------------------------- delivery
    def heads(self) -> list[OutboxItem]:
        """The oldest unfinished operation of each channel: the queues' heads."""
        rows = self.db.read(
            "SELECT seq, idem_key, channel, thread_key, op, payload, state, attempts, not_before, "
            "first_attempt_at FROM slack_outbox o WHERE state IN ('pending', 'sending') AND seq = "
            "(SELECT MIN(seq) FROM slack_outbox i WHERE i.channel = o.channel "
            "AND i.state IN ('pending', 'sending')) ORDER BY seq"
        )
        return [
            OutboxItem(
                int(str(r[0])),
                str(r[1]),
                str(r[2]),
                str(r[3]),
                str(r[4]),
                json.loads(str(r[5])),
                str(r[6]),
                int(str(r[7])),
                _f(r[8]),
                None if r[9] is None else _f(r[9]),
            )
            for r in rows
        ]

    def mark_sending(self, seq: int, now: float) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET state = ?, attempts = attempts + 1, "
                "first_attempt_at = COALESCE(first_attempt_at, ?) WHERE seq = ?",
                (SENDING, now, seq),
            )

    def mark_done(
        self, item: OutboxItem, now: float, channel_id: str | None, ts: str | None, *, anchor: bool
    ) -> None:
        """Done; ``anchor``: this message is (now) the thread's parent."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET state = ?, done_at = ?, result_ts = ?, last_error = NULL "
                "WHERE seq = ?",
                (DONE, now, ts, item.seq),
            )
            if anchor and ts is not None:
                conn.execute(
                    "UPDATE slack_threads SET channel_id = ?, ts = ? WHERE thread_key = ?",
                    (channel_id, ts, item.thread),
                )

    def retry_later(self, seq: int, state: str, not_before: float, error: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET state = ?, not_before = ?, last_error = ? WHERE seq = ?",
                (state, not_before, error[:500], seq),
            )

    def convert_to_post(self, seq: int) -> None:
        """An update (or reply) whose parent is gone becomes a fresh parent post."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET op = 'post', state = ?, first_attempt_at = NULL "
                "WHERE seq = ?",
                (PENDING, seq),
            )

    def mark_dead(self, seq: int, now: float, error: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET state = ?, done_at = ?, last_error = ? WHERE seq = ?",
                (DEAD, now, error[:500], seq),
            )

    def depth(self) -> dict[str, int]:
        rows = self.db.read(
            "SELECT channel, COUNT(*) FROM slack_outbox WHERE state IN ('pending', 'sending') "
            "GROUP BY channel"
        )
        return {str(r[0]): int(str(r[1])) for r in rows}

    def prune(self, before: float) -> int:
        """Forget finished operations older than ``before`` (their keys can no longer recur)."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                "DELETE FROM slack_outbox WHERE state IN ('done', 'dead') AND done_at < ?",
                (before,),
            )
            conn.execute("DELETE FROM slack_seen WHERE seen_at < ?", (before,))
            return cur.rowcount
