"""Slack threads that outlive their leader: one parent per episode across failovers.

Each replica has its own outbox and thread table (SQLite), so a new leader would post a
new parent for an episode another leader already announced. The episode state every
replica shares (app/remediation/journal.py) keeps each ladder episode's parent
message: channel, ``ts``, thread key and the message's content.

- ``publish``: the leader hands each posted parent of a ladder episode to the shared
  state (once per parent ``ts``), from the outbox worker.
- ``for_transitions``, ``for_events``: before an intake, a leader that does not know an
  episode looks for its parent there and adopts it into its own tables (the thread with
  its ``ts``, the episode as announced, the ladder's alias), so the plan updates that
  message and replies in its thread. A firing alert is matched by its exact labels (an
  engine that restarted without its state sees the alert fire again, as a new episode
  of the notifier, for the same ladder).

Grouped alerts' summary parents are not handed over; their episodes get a parent of
their own from a new leader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar

from guardian.adapters.slack.handover import HandoverStore
from guardian.adapters.slack.outbox import IntakeRows, SlackStore
from guardian.engine.notify.state import EpisodeRow, ThreadKind, ThreadRow
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, Phase, finding_from_dict, finding_to_dict
from guardian.model.remediation_events import RemediationEvent, episode_id
from guardian.model.shared_episode import SlackParent
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ThreadHandover(Protocol):
    """The shared episode state, as the notifier uses it (EpisodeJournal)."""

    def parent_for_ladder(self, episode: str) -> SlackParent | None: ...

    def parent_for_alert(self, labels: LabelSet) -> tuple[str, SlackParent] | None: ...

    def publish_parent(self, episode: str, parent: SlackParent, now: float) -> None: ...


_EMPTY = finding_to_dict(Finding("", "", "", Phase.FIRING, LabelSet(), 0.0, 0.0))
# Fields a finding usually copies from its labels: kept only where they differ.
_FROM_LABELS = ("alertname", "severity", "cluster", "namespace", "pod", "node", "gpu_group")


def pack_finding(finding: Finding) -> dict[str, Any]:
    """The parent's content, small: without its labels (the shared record has them), what
    it copied from them, and what is unset."""
    packed: dict[str, Any] = {}
    for key, value in finding_to_dict(finding).items():
        if key in _FROM_LABELS and finding.labels.get(key):
            if finding.labels.get(key) != value:
                packed[key] = value  # None too: unpacking would copy the label
            continue
        if key in ("labels", "episode") or value is None or value == _EMPTY.get(key):
            continue
        if key == "evidence":
            value = {k: v for k, v in value.items() if v is not None}
        packed[key] = value
    return packed


def unpack_finding(packed: Mapping[str, Any], labels: LabelSet, episode: str) -> Finding:
    copied = {k: labels[k] for k in _FROM_LABELS if labels.get(k)}
    evidence = {**_EMPTY["evidence"], **packed.get("evidence", {})}
    whole = {**_EMPTY, **copied, **packed, "evidence": evidence}
    return finding_from_dict({**whole, "labels": dict(labels), "episode": episode})


def _adoption(
    ladder_episode: str, alert_episode: str, parent: SlackParent, labels: LabelSet, now: float
) -> IntakeRows:
    finding = unpack_finding(parent.finding, labels, alert_episode)
    finding = finding.with_changes(ladder_episode=ladder_episode)
    return IntakeRows(
        now=now,
        threads=[
            ThreadRow(
                parent.thread, parent.channel, ThreadKind.EPISODE, parent.channel_id, parent.ts
            )
        ],
        episodes=[
            EpisodeRow(
                alert_episode,
                parent.thread,
                finding,
                announced=True,
                dirty=False,
                last_notified_at=finding.updated_at or now,
                reminders=0,
            )
        ],
        aliases=[(ladder_episode, alert_episode)],
    )


class Handover:
    """The notifier's side of the hand-over: adopt before an intake, publish after posts."""

    def __init__(self, store: SlackStore, shared: ThreadHandover, clock: Callable[[], float]):
        self._store = store
        self._rows = HandoverStore(store.db)
        self._shared = shared
        self._clock = clock

    def for_transitions(self, batch: Sequence[AlertTransition]) -> None:
        firing = {
            episode_id(t.labels, t.active_at): t.labels
            for t in batch
            if t.kind is TransitionKind.FIRING
        }
        known = self._store.episodes(firing)
        for alert_episode, labels in firing.items():
            if alert_episode in known:
                continue
            found = _ask(partial(self._shared.parent_for_alert, labels))
            if found is not None:
                ladder, parent = found
                self._adopt(ladder, alert_episode, parent, labels)

    def for_events(self, events: Iterable[RemediationEvent]) -> None:
        ladder = {e.episode: e.alert_labels for e in events}
        aliased = self._store.aliases(ladder)
        local = self._store.episodes(ladder)
        for episode, labels in ladder.items():
            if episode in aliased or episode in local:
                continue
            parent = _ask(partial(self._shared.parent_for_ladder, episode))
            if parent is not None:
                self._adopt(episode, parent.alert_episode, parent, labels)

    def publish(self) -> int:
        """Hand every posted parent of a ladder episode not handed over yet; how many."""
        done = 0
        for ladder, row, thread in self._rows.unhanded_parents():
            assert thread.ts is not None  # noqa: S101 - the query selects posted threads
            parent = SlackParent(
                thread.key,
                thread.channel,
                thread.channel_id,
                thread.ts,
                row.episode,
                pack_finding(row.finding),
            )
            now = self._clock()
            try:
                self._shared.publish_parent(ladder, parent, now)
            except GuardianError as exc:  # the next pass tries again
                logger.warning("slack: could not hand over the parent of %s: %s", ladder, exc)
                break
            self._rows.handed([(ladder, thread.ts)], now)
            done += 1
        return done

    def adopt(self, ladder: str, parent: SlackParent, labels: LabelSet) -> None:
        """A click on a parent another leader posted: go on in its thread."""
        if parent.alert_episode not in self._store.episodes({parent.alert_episode}):
            self._adopt(ladder, parent.alert_episode, parent, labels)

    def _adopt(
        self, ladder: str, alert_episode: str, parent: SlackParent, labels: LabelSet
    ) -> None:
        logger.info(
            "slack: episode %s goes on in the thread another leader started (%s, ts %s)",
            ladder,
            parent.channel,
            parent.ts,
        )
        rows = _adoption(ladder, alert_episode, parent, labels, self._clock())
        self._rows.adopt(rows, [(ladder, parent.ts)])


def _ask(question: Callable[[], T | None]) -> T | None:
    try:
        return question()
    except GuardianError as exc:  # a possible duplicate parent, never a lost message
        logger.warning("slack: shared episode state unreadable: %s", exc)
        return None
