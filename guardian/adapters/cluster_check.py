"""A configured cluster name that the source's cluster UIDs contradict, as of the
remediation loop's last cycle.

Not about any one alert or workload, so neither the ledger nor the refused-alerts table
holds it. Each cycle replaces the set, keeping when each finding was first made, so
``guardian status`` can say what is wrong and since when.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from guardian.adapters.sqlite_db import Database, MigrationSet, TableStore

CLUSTER_CHECK_MIGRATIONS = MigrationSet(
    "cluster_check",
    (
        """
        CREATE TABLE remediation_cluster_misconfiguration (
            message TEXT PRIMARY KEY,
            since REAL NOT NULL,
            last_seen REAL NOT NULL
        )
        """,
    ),
)


@dataclass(frozen=True)
class Misconfiguration:
    message: str
    since: float
    last_seen: float


class MisconfigurationStore(TableStore):
    MIGRATIONS = CLUSTER_CHECK_MIGRATIONS

    def replace(self, messages: Sequence[str], now: float) -> None:
        """Make ``messages`` the current set; one found before keeps when it was first."""
        with self.db.transaction() as conn:
            old = [
                str(m)
                for (m,) in conn.execute("SELECT message FROM remediation_cluster_misconfiguration")
            ]
            conn.executemany(
                "DELETE FROM remediation_cluster_misconfiguration WHERE message = ?",
                [(m,) for m in old if m not in messages],
            )
            conn.executemany(
                "INSERT INTO remediation_cluster_misconfiguration VALUES (?, ?, ?) "
                "ON CONFLICT(message) DO UPDATE SET last_seen = excluded.last_seen",
                [(m, now, now) for m in messages],
            )

    def current(self) -> list[Misconfiguration]:
        rows = self.db.read(
            "SELECT message, since, last_seen FROM remediation_cluster_misconfiguration "
            "ORDER BY since, message"
        )
        return [
            Misconfiguration(str(m), float(str(since)), float(str(seen))) for m, since, seen in rows
        ]


def read_misconfigurations(db: Database) -> list[Misconfiguration]:
    """The current set; none until the remediation loop has run (no table yet)."""
    try:
        return MisconfigurationStore(db).current()
    except sqlite3.OperationalError:
        return []
