"""The notifier's state as plain records: what intake gathers, and what the plan writes.

``NotifyState`` is the gathered part of the database (and the owners read from the
cluster) that one intake may look at; the planner works on a ``Draft`` of it and hands
back a ``NotifyPlan``: the rows to write and the outbox operations, in order, with the
reasons for what it left out. Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from guardian.engine.notify.lifecycle import Op
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, OwnerContext


class ThreadKind(StrEnum):
    EPISODE = "episode"  # one episode's parent and history
    GROUP = "group"  # a summary parent over several episodes


@dataclass(frozen=True)
class ThreadRow:
    """A Slack thread. ``channel_id`` and ``ts`` are known once its parent is posted."""

    key: str
    channel: str
    kind: ThreadKind
    channel_id: str | None = None
    ts: str | None = None


@dataclass(frozen=True)
class EpisodeRow:
    episode: str
    thread: str
    finding: Finding
    announced: bool
    dirty: bool  # changed while muted: catch up when the window ends
    last_notified_at: float
    reminders: int


def labels_key(labels: LabelSet) -> str | None:
    """How a ladder event finds its alert episode: the exact labels..."""
    return json.dumps(labels.items_sorted, separators=(",", ":")) if labels else None


def pod_key(labels: LabelSet) -> str | None:
    """...else the same rule, namespace and pod."""
    parts = [labels.get(k) for k in ("alertname", "namespace", "pod")]
    return "\x00".join(p for p in parts if p) if all(parts) else None


@dataclass(frozen=True)
class NotifyState:
    """What one intake may read. An episode, thread or alias missing here does not exist.

    ``seen``: the change keys (among those of this intake) already applied.
    ``unclaimed``: episodes in ``episodes`` that a ladder event may still be matched to.
    ``owners``: the cluster's owner details per new episode (absent: unknown).
    """

    episodes: Mapping[str, EpisodeRow] = field(default_factory=dict)
    threads: Mapping[str, ThreadRow] = field(default_factory=dict)
    seen: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)
    unclaimed: frozenset[str] = frozenset()
    owners: Mapping[str, OwnerContext] = field(default_factory=dict)


@dataclass(frozen=True)
class Enqueue:
    """One message operation for ``channel`` (the op names its thread and idempotency key)."""

    channel: str
    op: Op


@dataclass(frozen=True)
class Skip:
    """A change (or episode) that causes no message, and why."""

    key: str
    reason: str


@dataclass(frozen=True)
class NotifyPlan:
    """What to write, in one transaction. Every write is an upsert or keyed insert, so
    writing a plan twice changes nothing the second time."""

    threads: tuple[ThreadRow, ...] = ()  # new threads
    episodes: tuple[EpisodeRow, ...] = ()  # each changed episode's new row
    aliases: tuple[tuple[str, str], ...] = ()  # (ladder episode, alert episode)
    seen: tuple[str, ...] = ()  # change keys applied now
    outbox: tuple[Enqueue, ...] = ()
    skipped: tuple[Skip, ...] = ()
    cursor: int | None = None  # the remediation feed's new position


class Draft:
    """A working copy of ``NotifyState`` that records every change as the plan's rows."""

    def __init__(self, state: NotifyState) -> None:
        self.owners = state.owners
        self._episodes = dict(state.episodes)
        self._threads = dict(state.threads)
        self._seen = set(state.seen)
        self._aliases = dict(state.aliases)
        self._unclaimed = set(state.unclaimed)
        self._changed: dict[str, None] = {}  # episodes in first-change order
        self._new_threads: list[ThreadRow] = []
        self._new_aliases: list[tuple[str, str]] = []
        self._seen_now: list[str] = []
        self._outbox: list[Enqueue] = []
        self._skipped: list[Skip] = []

    # -------------------------------------------------------------- reads
    def episode(self, episode: str) -> EpisodeRow | None:
        return self._episodes.get(episode)

    def thread(self, key: str) -> ThreadRow | None:
        return self._threads.get(key)

    def members(self, thread: str) -> list[Finding]:
        rows = sorted(
            (r for r in self._episodes.values() if r.thread == thread), key=lambda r: r.episode
        )
        return [r.finding for r in rows]

    def alias(self, ladder_episode: str) -> str | None:
        return self._aliases.get(ladder_episode)

    def match_alert(self, labels: LabelSet) -> str | None:
        """The newest unclaimed episode with these labels, else the same rule, namespace
        and pod."""
        for key_of in (labels_key, pod_key):
            key = key_of(labels)
            if key is None:
                continue
            found = [
                row
                for ep in self._unclaimed
                if (row := self._episodes.get(ep)) is not None and key_of(row.finding.labels) == key
            ]
            if found:
                return max(found, key=lambda r: (r.finding.active_at, r.episode)).episode
        return None

    # -------------------------------------------------------------- changes
    def mark_seen(self, key: str) -> bool:
        """Remember ``key``; ``True`` if it had been applied already."""
        if key in self._seen:
            return True
        self._seen.add(key)
        self._seen_now.append(key)
        return False

    def save(self, row: EpisodeRow) -> None:
        if row.episode not in self._episodes:
            self._unclaimed.add(row.episode)  # a new episode: a later ladder may match it
        self._episodes[row.episode] = row
        self._changed.setdefault(row.episode)

    def ensure_thread(self, key: str, channel: str, kind: ThreadKind) -> ThreadRow:
        """The thread ``key``; created with ``channel`` and ``kind`` unless it exists."""
        existing = self._threads.get(key)
        if existing is not None:
            return existing
        row = ThreadRow(key, channel, kind)
        self._threads[key] = row
        self._new_threads.append(row)
        return row

    def claim(self, ladder_episode: str, episode: str) -> None:
        self._aliases[ladder_episode] = episode
        self._unclaimed.discard(episode)
        self._new_aliases.append((ladder_episode, episode))

    def enqueue(self, thread: ThreadRow, ops: Iterable[Op]) -> None:
        self._outbox.extend(Enqueue(thread.channel, op) for op in ops)

    def skip(self, key: str, reason: str) -> None:
        self._skipped.append(Skip(key, reason))

    def plan(self, cursor: int | None = None) -> NotifyPlan:
        return NotifyPlan(
            threads=tuple(self._new_threads),
            episodes=tuple(self._episodes[ep] for ep in self._changed),
            aliases=tuple(self._new_aliases),
            seen=tuple(self._seen_now),
            outbox=tuple(self._outbox),
            skipped=tuple(self._skipped),
            cursor=cursor,
        )
