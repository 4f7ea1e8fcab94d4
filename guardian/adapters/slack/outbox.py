"""The Slack notifier's durable state in the shared SQLite database: rows in, rows out.

- ``slack_outbox``: every message operation, keyed by an idempotency key (UNIQUE), in
  one FIFO per channel. ``pending`` → ``sending`` (committed BEFORE the call to Slack) →
  ``done`` (with the message ``ts``) or ``dead`` (Slack said it can never work).
  A row found in ``sending`` may have reached Slack: it is reconciled before a re-post.
- ``slack_threads``: per thread (one episode, or one group of episodes) the channel ID
  and parent ``ts`` once posted.
- ``slack_episodes``: each episode's current finding, its thread and reminder state.
- ``slack_aliases``: which alert episode a ladder (workload) episode was matched to.
- ``slack_cursors``: how far a feed (the remediation ledger) has been consumed.
- ``slack_seen``: every change (transition or ladder event) already applied, so a replay
  after a restart changes nothing.
- ``slack_handover``: which ladder episodes' parent messages were handed to the episode
  state every replica shares (so that a new leader updates them instead of posting anew).

No decisions here: intake reads rows by key (before its transaction) and ``write``s
what the planner decided (``IntakeRows``) inside one; delivery moves outbox rows
through their states.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from guardian.adapters.slack.outbox_schema import SLACK_MIGRATIONS
from guardian.adapters.sqlite_db import Database
from guardian.engine.notify.lifecycle import OpKind
from guardian.engine.notify.state import EpisodeRow, ThreadKind, ThreadRow, labels_key, pod_key
from guardian.model.notifications import finding_from_dict, finding_to_dict

PENDING, SENDING, DONE, DEAD = "pending", "sending", "done", "dead"
_PICTURES = " pictures"  # no channel name has a space: a queue of its own


def picture_queue(channel: str) -> str:
    """The queue of a channel's evidence pictures: beside its messages, so that a slow or
    failing upload never holds a notification back."""
    return channel + _PICTURES


def queue_channel(queue: str) -> str:
    """The channel a queue posts to."""
    return queue.removesuffix(_PICTURES)


_EPISODE = "episode, thread_key, finding, announced, dirty, last_notified_at, reminders"
_CHUNK = 400  # keys per IN (...): well under SQLite's variable limit


@dataclass(frozen=True)
class OutboxItem:
    seq: int
    idem: str
    channel: str
    thread: str
    op: OpKind
    payload: dict[str, Any]
    state: str
    attempts: int
    not_before: float
    first_attempt_at: float | None


@dataclass(frozen=True)
class OutboxRow:
    """A new message operation, rendered."""

    idem: str
    channel: str
    thread: str
    op: OpKind
    payload: dict[str, Any]


@dataclass(frozen=True)
class IntakeRows:
    """One intake's writes, at ``now``. Inserts of keyed rows are ignored when the key is
    there already; episodes and the cursor are upserts."""

    now: float
    threads: Sequence[ThreadRow] = ()
    episodes: Sequence[EpisodeRow] = ()
    aliases: Sequence[tuple[str, str]] = ()  # (ladder episode, alert episode)
    seen: Sequence[str] = ()
    outbox: Sequence[OutboxRow] = ()
    cursor: tuple[str, str] | None = None  # (feed, position)
    prune_before: float | None = None  # forget finished operations and changes before this
    # Posts that another replica may have made since then: each is looked for in Slack
    # (its marker) before it is sent, as after a crash mid-send.
    maybe_posted_since: float | None = None


def _f(value: object) -> float:
    return float(str(value))


def _episode(row: Sequence[Any]) -> EpisodeRow:
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


def _thread(row: Sequence[Any]) -> ThreadRow:
    key, channel, cid, ts, kind = row
    return ThreadRow(
        str(key),
        str(channel),
        ThreadKind(str(kind)),
        None if cid is None else str(cid),
        None if ts is None else str(ts),
    )


def _episode_params(row: EpisodeRow) -> tuple[object, ...]:
    return (
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
    )


class SlackStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        db.migrate([SLACK_MIGRATIONS])

    def _in(self, sql: str, keys: Iterable[str]) -> list[tuple[object, ...]]:
        """``sql`` with ``{marks}`` for an IN list, run over ``keys`` in chunks."""
        unique = sorted(set(keys))
        rows: list[tuple[object, ...]] = []
        for i in range(0, len(unique), _CHUNK):
            chunk = unique[i : i + _CHUNK]
            rows.extend(self.db.read(sql.format(marks=", ".join("?" * len(chunk))), chunk))
        return rows

    def _episodes(self, column: str, keys: Iterable[str], where: str = "") -> dict[str, EpisodeRow]:
        sql = f"SELECT {_EPISODE} FROM slack_episodes e WHERE {column} IN ({{marks}}){where}"  # noqa: S608 - fixed names
        return {r.episode: r for r in map(_episode, self._in(sql, keys))}

    # -------------------------------------------------------------- intake reads
    def episodes(self, ids: Iterable[str]) -> dict[str, EpisodeRow]:
        return self._episodes("episode", ids)

    def episodes_in_threads(self, keys: Iterable[str]) -> dict[str, EpisodeRow]:
        return self._episodes("thread_key", keys)

    def unclaimed_episodes(
        self, labels_keys: Iterable[str], pod_keys: Iterable[str]
    ) -> dict[str, EpisodeRow]:
        """Episodes with one of these label or pod keys that no ladder episode claimed."""
        unclaimed = " AND NOT EXISTS (SELECT 1 FROM slack_aliases a WHERE a.episode = e.episode)"
        return {
            **self._episodes("labels_key", labels_keys, unclaimed),
            **self._episodes("pod_key", pod_keys, unclaimed),
        }

    def unsettled_episodes(self) -> dict[str, EpisodeRow]:
        """Open episodes (reminders) and dirty ones (changed while muted)."""
        rows = self.db.read(
            f"SELECT {_EPISODE} FROM slack_episodes WHERE is_open = 1 OR dirty = 1"  # noqa: S608 - fixed names
        )
        return {r.episode: r for r in map(_episode, rows)}

    def threads(self, keys: Iterable[str]) -> dict[str, ThreadRow]:
        rows = self._in(
            "SELECT thread_key, channel, channel_id, ts, kind FROM slack_threads "
            "WHERE thread_key IN ({marks})",
            keys,
        )
        return {t.key: t for t in map(_thread, rows)}

    def aliases(self, ladder_episodes: Iterable[str]) -> dict[str, str]:
        rows = self._in(
            "SELECT remediation_episode, episode FROM slack_aliases "
            "WHERE remediation_episode IN ({marks})",
            ladder_episodes,
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def seen(self, keys: Iterable[str]) -> frozenset[str]:
        """Which of these change keys were applied already."""
        rows = self._in("SELECT change_key FROM slack_seen WHERE change_key IN ({marks})", keys)
        return frozenset(str(r[0]) for r in rows)

    def cursor(self, name: str) -> str | None:
        rows = self.db.read("SELECT value FROM slack_cursors WHERE name = ?", (name,))
        return str(rows[0][0]) if rows else None

    # -------------------------------------------------------------- the intake write
    def write(self, conn: sqlite3.Connection, rows: IntakeRows) -> None:
        """Inside the caller's transaction: SQL only."""
        now = rows.now
        conn.executemany(
            "INSERT OR IGNORE INTO slack_threads (thread_key, channel, channel_id, ts, kind, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [(t.key, t.channel, t.channel_id, t.ts, t.kind.value, now) for t in rows.threads],
        )
        conn.executemany(
            "INSERT INTO slack_episodes (episode, thread_key, finding, announced, dirty, "
            "last_notified_at, reminders, is_open, labels_key, pod_key, active_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(episode) DO UPDATE SET thread_key = excluded.thread_key, "
            "finding = excluded.finding, announced = excluded.announced, dirty = excluded.dirty, "
            "last_notified_at = excluded.last_notified_at, reminders = excluded.reminders, "
            "is_open = excluded.is_open",
            [_episode_params(r) for r in rows.episodes],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO slack_aliases (remediation_episode, episode) VALUES (?, ?)",
            rows.aliases,
        )
        conn.executemany(
            "INSERT OR IGNORE INTO slack_seen (change_key, seen_at) VALUES (?, ?)",
            [(key, now) for key in rows.seen],
        )
        since = rows.maybe_posted_since
        conn.executemany(
            "INSERT OR IGNORE INTO slack_outbox (idem_key, channel, thread_key, op, payload, "
            "state, not_before, created_at, first_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    o.idem,
                    o.channel,
                    o.thread,
                    o.op.value,
                    json.dumps(o.payload, separators=(",", ":")),
                    SENDING if since is not None and o.op is OpKind.POST else PENDING,
                    now,
                    now,
                    since if o.op is OpKind.POST else None,
                )
                for o in rows.outbox
            ],
        )
        if rows.cursor is not None:
            conn.execute(
                "INSERT INTO slack_cursors (name, value) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                rows.cursor,
            )
        if rows.prune_before is not None:
            conn.execute(
                "DELETE FROM slack_outbox WHERE state IN ('done', 'dead') AND done_at < ?",
                (rows.prune_before,),
            )
            conn.execute("DELETE FROM slack_seen WHERE seen_at < ?", (rows.prune_before,))

    # -------------------------------------------------------------- delivery
    def known_channel_id(self, channel: str) -> str | None:
        """The ID Slack answered for a configured channel name, from an earlier post."""
        rows = self.db.read(
            "SELECT channel_id FROM slack_threads WHERE channel = ? AND channel_id IS NOT NULL "
            "LIMIT 1",
            (channel,),
        )
        return str(rows[0][0]) if rows else None

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
                OpKind(str(r[4])),
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

    def wait_for_parent(self, seq: int, now: float, not_before: float) -> None:
        """Not an attempt: the wait starts at the first look (``first_attempt_at``)."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET not_before = ?, first_attempt_at = "
                "COALESCE(first_attempt_at, ?) WHERE seq = ?",
                (not_before, now, seq),
            )

    def convert_to_post(self, seq: int) -> None:
        """An update (or reply) whose parent is gone becomes a fresh parent post."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE slack_outbox SET op = ?, state = ?, first_attempt_at = NULL WHERE seq = ?",
                (OpKind.POST.value, PENDING, seq),
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
