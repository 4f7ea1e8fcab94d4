"""The Slack notifier's tables in the shared SQLite database, as migrations (outbox.py says
what each table holds)."""

from __future__ import annotations

from guardian.adapters.sqlite_db import MigrationSet

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
        """
        CREATE TABLE slack_handover (
            remediation_episode TEXT PRIMARY KEY,
            ts TEXT NOT NULL,
            handed_at REAL NOT NULL
        )
        """,
    ),
)
