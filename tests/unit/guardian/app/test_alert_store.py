"""The SQLite state: one transaction per group, migrations per component, crash safety."""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path

import pytest

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.sqlite_db import Database, MigrationSet
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian_common.errors import ConfigError

L1 = LabelSet({"alertname": "A", "pod": "p1"})
L2 = LabelSet({"alertname": "A", "pod": "p2"})


def _state() -> dict[str, dict[LabelSet, Alert]]:
    return {
        "A{}": {
            L1: Alert(
                L1, LabelSet({"summary": "s"}), AlertState.FIRING, 100.0, 2.5, fired_at=160.0
            ),
            L2: Alert(
                L2,
                LabelSet(),
                AlertState.INACTIVE,
                100.0,
                math.nan,
                fired_at=100.0,
                resolved_at=200.0,
                keep_firing_since=190.0,
            ),
        }
    }


def test_roundtrip_every_field(tmp_path: Path) -> None:
    store = AlertStore.open(str(tmp_path / "s.db"))
    store.save_group("f;g", 220.0, _state())
    store.close()

    reopened = AlertStore.open(str(tmp_path / "s.db"))
    loaded = reopened.load_group("f;g")

    assert loaded is not None
    assert loaded.last_eval_ts == 220.0
    got = loaded.rules["A{}"]
    assert got[L1] == _state()["A{}"][L1]
    assert got[L2].resolved_at == 200.0
    assert got[L2].keep_firing_since == 190.0
    assert math.isnan(got[L2].value)
    assert reopened.load_group("other") is None
    mode = reopened.db.read("PRAGMA journal_mode")[0][0]
    assert mode == "wal"


def test_save_replaces_the_group_and_failed_transaction_keeps_the_old(tmp_path: Path) -> None:
    store = AlertStore.open(str(tmp_path / "s.db"))
    store.save_group("f;g", 220.0, _state())
    store.save_group("f;g", 280.0, {"A{}": {L1: _state()["A{}"][L1]}})

    def boom(_conn: sqlite3.Connection) -> None:
        raise RuntimeError("crash mid-cycle")

    with pytest.raises(RuntimeError):
        store.save_group("f;g", 340.0, {}, extra=boom)

    loaded = store.load_group("f;g")
    assert loaded is not None
    assert loaded.last_eval_ts == 280.0
    assert list(loaded.rules["A{}"]) == [L1]


def test_other_components_add_their_tables_through_migrations(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    outbox_v1 = MigrationSet("outbox", ("CREATE TABLE outbox (id INTEGER PRIMARY KEY, body TEXT)",))
    store = AlertStore.open(path, [outbox_v1])
    assert store.db.schema_version("engine") == 1
    assert store.db.schema_version("outbox") == 1
    store.close()

    outbox_v2 = MigrationSet(
        "outbox", (*outbox_v1.steps, "ALTER TABLE outbox ADD COLUMN sent REAL; SELECT 1")
    )
    db = Database.open(path, [outbox_v2])
    assert db.schema_version("outbox") == 2
    with db.transaction() as conn:
        conn.execute("INSERT INTO outbox (body, sent) VALUES ('x', 1.0)")
    db.close()

    with pytest.raises(ConfigError, match="newer than this program's 1"):
        Database.open(path, [outbox_v1])


def test_incremental_save_writes_changes_and_deletes_vanished(tmp_path: Path) -> None:
    store = AlertStore.open(str(tmp_path / "s.db"))
    first = _state()
    store.save_group("f;g", 220.0, first)
    l3 = LabelSet({"alertname": "B", "pod": "p3"})
    changed = Alert(L1, LabelSet({"summary": "new"}), AlertState.FIRING, 100.0, 3.0, fired_at=160.0)
    second = {
        "A{}": {L1: changed},  # L2 vanished
        "B{}": {l3: Alert(l3, LabelSet(), AlertState.PENDING, 280.0, 1.0)},
    }

    store.save_group("f;g", 280.0, second, previous=first)

    loaded = store.load_group("f;g")
    assert loaded is not None
    assert loaded.rules == second
    assert loaded.last_eval_ts == 280.0


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file (a character device)"),
        (lambda p: p.mkdir(), "not a regular file (a directory)"),
        (lambda p: p.write_bytes(b"not sqlite\n" * 100), "file is not a database"),
    ],
    ids=["fifo", "dev-zero", "directory", "not-sqlite"],
)
def test_a_state_path_that_is_no_database_is_one_line(
    tmp_path: Path, make: object, reason: str
) -> None:
    """``guardian status --state /dev/zero`` printed a 28-line sqlite traceback."""
    path = tmp_path / "state.db"
    assert callable(make)
    make(path)
    with pytest.raises(ConfigError) as info:
        Database.open(path, [MigrationSet("x", ("CREATE TABLE t (a)",))])
    assert str(info.value) == f"{path}: cannot open state database: {reason}"


def test_a_fifo_beside_the_database_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "state.db-wal")
    with pytest.raises(ConfigError, match=r"state\.db-wal: .*not a regular file \(a FIFO\)"):
        Database.open(tmp_path / "state.db")
