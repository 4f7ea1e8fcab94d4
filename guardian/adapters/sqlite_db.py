"""The controller's one SQLite database, shared by the components that keep state.

Each component (the rule engine's alert_store, the remediation ledger, the Slack
outbox) owns its tables and declares them as numbered migrations under its own name::

    ENGINE_MIGRATIONS = MigrationSet("engine", ("CREATE TABLE ...", "ALTER TABLE ..."))
    db = Database.open(path, [ENGINE_MIGRATIONS, LEDGER_MIGRATIONS, SLACK_MIGRATIONS])

``schema_versions`` records how far each component got; ``open`` applies the missing
steps, each in its own transaction. WAL mode keeps readers (the HTTP endpoint, the
CLI) off the writer's back, and ``synchronous=FULL`` makes a committed evaluation
survive power loss; a ``kill -9`` mid-transaction loses only that transaction.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

from guardian_common.errors import ConfigError
from guardian_common.files import not_regular

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigrationSet:
    """A component's schema: ``steps[i]`` takes it from version i to i + 1."""

    component: str
    steps: Sequence[str]


class Database:
    """A serialised connection. ``transaction()`` is the only way to write."""

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        self.path = path
        self._conn = connection
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: str | Path, migrations: Sequence[MigrationSet] = ()) -> Database:
        target = str(path)
        if target != ":memory:":
            _check_files(target)
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot create state directory: {exc}", path=target) from exc
        try:
            conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open state database: {exc}", path=target) from None
        db = cls(conn, target)
        try:
            for pragma in _PRAGMAS:
                conn.execute(pragma)
            db.migrate(migrations)
        except sqlite3.Error as exc:  # "file is not a database", a read-only file, ...
            conn.close()
            raise ConfigError(f"cannot open state database: {exc}", path=target) from None
        return db

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK if the block raises."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def read(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    def schema_version(self, component: str) -> int:
        rows = self.read("SELECT version FROM schema_versions WHERE component = ?", (component,))
        return int(str(rows[0][0])) if rows else 0

    def migrate(self, migrations: Sequence[MigrationSet]) -> None:
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_versions ("
                "component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
        for migration in migrations:
            current = self.schema_version(migration.component)
            if current > len(migration.steps):
                raise ConfigError(
                    f"state database has {migration.component} schema version {current}, newer "
                    f"than this program's {len(migration.steps)}; upgrade guardian",
                    path=self.path,
                )
            for version in range(current, len(migration.steps)):
                with self.transaction() as conn:
                    for statement in _statements(migration.steps[version]):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_versions (component, version) VALUES (?, ?) "
                        "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                        (migration.component, version + 1),
                    )
                logger.info(
                    "state database: %s schema now at v%s", migration.component, version + 1
                )


class TableStore:
    """A component's tables (``MIGRATIONS``) in a shared database."""

    MIGRATIONS: ClassVar[MigrationSet]

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def attach(cls, db: Database) -> Self:
        """Use the database another component opened (the engine's), adding our tables."""
        db.migrate([cls.MIGRATIONS])
        return cls(db)


_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=5000",
)
# The files SQLite keeps beside the database.
_SIDECARS = ("", "-wal", "-shm", "-journal")


def _check_files(target: str) -> None:
    """The database and the files beside it are regular files where they exist: SQLite
    would block opening a FIFO and write into a device such as /dev/zero."""
    for suffix in _SIDECARS:
        path = target + suffix
        try:
            mode = os.stat(path).st_mode  # follows symlinks, never opens: cannot block
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(f"cannot open state database: {exc.strerror}", path=path) from None
        refused = not_regular(mode)
        if refused is not None:
            raise ConfigError(f"cannot open state database: {refused}", path=path)


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT our transaction; split plain DDL on ';' instead.
    return [s.strip() for s in script.split(";") if s.strip()]
