"""The alerts the remediation loop refuses to act on, as of its last cycle.

An alert of another cluster, or one whose pod is not the pod the evidence is about,
never reaches a workload, so it has no place in the ledger (which is per workload).
This table holds the current set: each cycle replaces it, keeping when each alert was
first refused, so ``guardian status`` can say what is refused, why, and since when.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from guardian.adapters.sqlite_db import MigrationSet, TableStore
from guardian.model.labels import LabelSet

logger = logging.getLogger(__name__)

REFUSED_ALERTS_MIGRATIONS = MigrationSet(
    "refused_alerts",
    (
        """
        CREATE TABLE remediation_refused_alerts (
            labels TEXT PRIMARY KEY,
            refusal TEXT NOT NULL,
            reason TEXT NOT NULL,
            since REAL NOT NULL,
            last_seen REAL NOT NULL
        )
        """,
    ),
)


@dataclass(frozen=True)
class RefusedRow:
    labels: LabelSet
    refusal: str  # the kind, as the metrics' reason label
    reason: str
    since: float
    last_seen: float


def _labels_json(labels: LabelSet) -> str:
    return json.dumps(labels.items_sorted, separators=(",", ":"), ensure_ascii=False)


class RefusedAlertStore(TableStore):
    MIGRATIONS = REFUSED_ALERTS_MIGRATIONS

    def replace(self, refused: Sequence[tuple[LabelSet, str, str]], now: float) -> None:
        """Make (labels, refusal, reason) the current set; an alert refused before keeps
        the time it was first refused."""
        rows = {_labels_json(labels): (kind, why) for labels, kind, why in refused}
        with self.db.transaction() as conn:
            old = [str(k) for (k,) in conn.execute("SELECT labels FROM remediation_refused_alerts")]
            conn.executemany(
                "DELETE FROM remediation_refused_alerts WHERE labels = ?",
                [(k,) for k in old if k not in rows],
            )
            conn.executemany(
                "INSERT INTO remediation_refused_alerts VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(labels) DO UPDATE SET refusal = excluded.refusal, "
                "reason = excluded.reason, last_seen = excluded.last_seen",
                [(key, kind, why, now, now) for key, (kind, why) in rows.items()],
            )

    def current(self) -> list[RefusedRow]:
        rows = self.db.read(
            "SELECT labels, refusal, reason, since, last_seen FROM remediation_refused_alerts "
            "ORDER BY since, labels"
        )
        return [
            RefusedRow(
                LabelSet(dict(json.loads(str(labels)))),
                str(kind),
                str(why),
                float(str(since)),
                float(str(seen)),
            )
            for labels, kind, why, since, seen in rows
        ]
