"""Gather what one notifier intake reads: rows from the database, owners from the cluster.

All of it happens before the transaction that writes the plan. ``owners`` may call the
Kubernetes API (seconds, when the API server is slow), so the service calls it before
it takes its intake lock; the database reads (``for_*``) run under that lock, so no
other intake changes the rows between the read and the write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from guardian.adapters.slack.outbox import SlackStore
from guardian.engine.notify import lifecycle as lc
from guardian.engine.notify.planner import PlannerSettings, group_keys, needs_owner
from guardian.engine.notify.state import (
    EpisodeRow,
    NotifyState,
    ThreadKind,
    ThreadRow,
    labels_key,
    pod_key,
)
from guardian.model.alerts import AlertTransition
from guardian.model.labels import LabelSet
from guardian.model.notifications import OwnerContext
from guardian.model.remediation_events import RemediationEvent, episode_id

logger = logging.getLogger(__name__)

ContextLookup = Callable[[LabelSet], OwnerContext | None]


class Gatherer:
    def __init__(
        self, store: SlackStore, settings: PlannerSettings, context: ContextLookup | None
    ) -> None:
        self._store = store
        self._settings = settings
        self._context = context

    # -------------------------------------------------------------- the cluster
    def owners(self, batch: Sequence[AlertTransition]) -> dict[str, OwnerContext]:
        """Owner details for the batch's new episodes, by episode (network I/O)."""
        lookup = self._context
        if lookup is None:
            return {}
        # Episodes are never deleted: one known now is known when the plan is made.
        known = set(self._store.episodes(episode_id(t.labels, t.active_at) for t in batch))
        out: dict[str, OwnerContext] = {}
        for t in needs_owner(batch, known):
            ep = episode_id(t.labels, t.active_at)
            if ep not in out and (context := _ask(lookup, t.labels)) is not None:
                out[ep] = context
        return out

    # -------------------------------------------------------------- the database
    def for_transitions(
        self, batch: Sequence[AlertTransition], owners: Mapping[str, OwnerContext]
    ) -> NotifyState:
        ids = {episode_id(t.labels, t.active_at) for t in batch}
        episodes = self._store.episodes(ids)
        groups = group_keys(batch, set(episodes), self._settings)
        return self._state(
            episodes,
            thread_keys=[*groups, *(f"episode:{ep}" for ep in ids)],
            seen=self._store.seen(lc.transition_idem(t) for t in batch),
            owners=owners,
        )

    def for_events(self, events: Sequence[RemediationEvent]) -> NotifyState:
        ladder = {e.episode for e in events}
        aliases = self._store.aliases(ladder)
        labelled = [e.alert_labels for e in events if e.alert_labels]
        unclaimed = self._store.unclaimed_episodes(
            _keys(labels_key(labels) for labels in labelled),
            _keys(pod_key(labels) for labels in labelled),
        )
        episodes = {**unclaimed, **self._store.episodes(ladder | set(aliases.values()))}
        return self._state(
            episodes,
            thread_keys=[f"episode:{ep}" for ep in ladder],
            seen=self._store.seen(lc.event_idem(e) for e in events),
            aliases=aliases,
            unclaimed=frozenset(unclaimed),
        )

    def for_click(self, episode: str, keys: Iterable[str]) -> NotifyState:
        return self._state(self._store.episodes({episode}), seen=self._store.seen(keys))

    def for_tick(self) -> NotifyState:
        return self._state(self._store.unsettled_episodes())

    def _state(
        self,
        episodes: dict[str, EpisodeRow],
        *,
        thread_keys: Iterable[str] = (),
        seen: frozenset[str] = frozenset(),
        aliases: Mapping[str, str] | None = None,
        unclaimed: frozenset[str] = frozenset(),
        owners: Mapping[str, OwnerContext] | None = None,
    ) -> NotifyState:
        """Add the episodes' threads, and every member of a group thread (its summary
        lists them all)."""
        threads: dict[str, ThreadRow] = self._store.threads(
            {r.thread for r in episodes.values()} | set(thread_keys)
        )
        groups = [key for key, t in threads.items() if t.kind is ThreadKind.GROUP]
        members = self._store.episodes_in_threads(groups)
        return NotifyState(
            episodes={**members, **episodes},
            threads=threads,
            seen=seen,
            aliases=aliases or {},
            unclaimed=unclaimed,
            owners=owners or {},
        )


def _ask(lookup: ContextLookup, labels: LabelSet) -> OwnerContext | None:
    try:
        return lookup(labels)
    except Exception:  # per item: a lookup failure costs the mention, never the message
        logger.exception("slack: owner lookup failed for %s", labels)
        return None


def _keys(keys: Iterable[str | None]) -> set[str]:
    return {k for k in keys if k is not None}
