"""Which episode a message we posted is about, from our own records of it (outbox.py's
tables), never from what a click says: a button's ``value`` is checked against this.

A message with buttons is an episode's parent (its thread's ``ts``) or, in a group's
thread, one episode's details (a reply whose rendered buttons name that episode).
"""

from __future__ import annotations

import json
from typing import Any

from guardian.adapters.sqlite_db import Database
from guardian.engine.notify.state import ThreadKind


def message_episode(db: Database, channel_id: str, ts: str) -> str | None:
    """The episode whose buttons message ``ts`` in ``channel_id`` carries; None when it
    is not a message of ours (posted by another leader, or its records were pruned)."""
    rows = db.read(
        "SELECT e.episode FROM slack_threads t JOIN slack_episodes e "
        "ON e.thread_key = t.thread_key WHERE t.ts = ? AND t.channel_id = ? AND t.kind = ?",
        (ts, channel_id, ThreadKind.EPISODE.value),
    )
    if len(rows) == 1:
        return str(rows[0][0])
    rows = db.read(
        "SELECT o.payload FROM slack_outbox o JOIN slack_threads t "
        "ON t.thread_key = o.thread_key WHERE o.result_ts = ? AND t.channel_id = ? "
        "AND o.state = 'done' ORDER BY o.seq DESC LIMIT 1",
        (ts, channel_id),
    )
    return _button_episode(json.loads(str(rows[0][0]))) if rows else None


def _button_episode(payload: dict[str, Any]) -> str | None:
    """The one episode the payload's buttons name (None: none, or several)."""
    values = {
        str(element.get("value", ""))
        for block in payload.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements") or []
        if element.get("type") == "button"
    }
    return values.pop() if len(values) == 1 else None
