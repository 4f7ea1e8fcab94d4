"""The hand-over rows in the notifier's SQLite: a new leader adopts another leader's
Slack threads; a leader notes which parents it handed to the shared episode state.

``slack_handover`` (created with the outbox's tables, outbox.py) holds, per ladder
episode, the ``ts`` of the parent message last handed over.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from guardian.adapters.slack.outbox import IntakeRows, _episode, _episode_params, _thread
from guardian.adapters.sqlite_db import Database
from guardian.engine.notify.state import EpisodeRow, ThreadRow


class HandoverStore:
    def __init__(self, db: Database) -> None:
        self.db = db  # migrated by SlackStore

    def adopt(self, rows: IntakeRows, handed: Sequence[tuple[str, str]]) -> None:
        """Another leader's threads, episodes and aliases, as the shared state has them;
        what is here already stays. ``handed``: (ladder episode, ts) already shared."""
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO slack_threads (thread_key, channel, channel_id, ts, "
                "kind, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (t.key, t.channel, t.channel_id, t.ts, t.kind.value, rows.now)
                    for t in rows.threads
                ],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO slack_episodes (episode, thread_key, finding, announced, "
                "dirty, last_notified_at, reminders, is_open, labels_key, pod_key, active_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_episode_params(r) for r in rows.episodes],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO slack_aliases (remediation_episode, episode) VALUES (?, ?)",
                rows.aliases,
            )
            _handed(conn, handed, rows.now)

    def unhanded_parents(self) -> list[tuple[str, EpisodeRow, ThreadRow]]:
        """Ladder episodes whose alert's own thread has a posted parent not yet handed
        over (or handed over with another ``ts``): (ladder episode, its row, its thread)."""
        rows = self.db.read(
            "SELECT a.remediation_episode, e.episode, e.thread_key, e.finding, e.announced, "
            "e.dirty, e.last_notified_at, e.reminders, t.channel, t.channel_id, t.ts, t.kind "
            "FROM slack_aliases a JOIN slack_episodes e ON e.episode = a.episode "
            "JOIN slack_threads t ON t.thread_key = e.thread_key "
            "WHERE t.ts IS NOT NULL AND t.kind = 'episode' AND NOT EXISTS ("
            "SELECT 1 FROM slack_handover h WHERE h.remediation_episode = a.remediation_episode "
            "AND h.ts = t.ts) ORDER BY a.remediation_episode"
        )
        return [(str(r[0]), _episode(r[1:8]), _thread((r[2], *r[8:12]))) for r in rows]

    def handed(self, handed: Sequence[tuple[str, str]], now: float) -> None:
        with self.db.transaction() as conn:
            _handed(conn, handed, now)


def _handed(conn: sqlite3.Connection, handed: Sequence[tuple[str, str]], now: float) -> None:
    conn.executemany(
        "INSERT INTO slack_handover (remediation_episode, ts, handed_at) VALUES (?, ?, ?) "
        "ON CONFLICT(remediation_episode) DO UPDATE SET ts = excluded.ts, "
        "handed_at = excluded.handed_at",
        [(episode, ts, now) for episode, ts in handed],
    )
