"""One remediation episode as every replica shares it: what a new leader needs to go on.

The leader keeps one ``SharedEpisode`` per episode in the cluster (the adapters' episode
store): the steps applied with their times, the step in flight, the next step and its
due time (the grace deadline), and the Slack parent of the episode, so that a new leader
neither repeats a step nor opens a second Slack thread. Pure data, and what a wait said
makes of a record (``with_wait``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from guardian.model.labels import LabelSet
from guardian.model.reclaim import Wait
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef


class EpisodeState(StrEnum):
    OPEN = "open"  # laddering
    RECLAIMED = "reclaimed"  # stopped; open until restored
    CLOSED = "closed"  # the alerts ended before a reclaim
    RESTORED = "restored"


LIVE_STATES = (EpisodeState.OPEN, EpisodeState.RECLAIMED)


@dataclass(frozen=True, slots=True)
class StepMark:
    """A step done: applied, or recorded as dry-run; by which replica."""

    step: LadderStep
    outcome: StepOutcome
    at: float
    by: str


@dataclass(frozen=True, slots=True)
class InFlight:
    """A step a replica claimed and has not settled: it is applying it, or it died."""

    step: LadderStep
    attempt: int
    at: float
    by: str


@dataclass(frozen=True, slots=True)
class SlackParent:
    """The episode's parent message: a new leader updates it and replies in its thread."""

    thread: str  # the notifier's thread key
    channel: str  # as configured (a name or an ID): the outbox queue
    channel_id: str | None
    ts: str
    alert_episode: str  # the notifier's episode (per alert) the ladder was matched to
    finding: Mapping[str, Any] = field(default_factory=dict)  # the message's content, packed


@dataclass(frozen=True, slots=True)
class Outage:
    """A spell without evidence (alerts not evaluated, a pipeline alert on its node):
    the episode is held as it is, said once, and resumes once the evidence is back."""

    since: float
    resumed_at: float | None = None  # None: still held


@dataclass(frozen=True, slots=True)
class SharedEpisode:
    episode: str
    workload: WorkloadRef
    policy: str
    started_at: float
    state: EpisodeState
    alert_labels: LabelSet
    updated_at: float
    ended_at: float | None = None
    steps: tuple[StepMark, ...] = ()
    inflight: InFlight | None = None
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    planned: str = ""  # the reason of the last wait recorded (said once)
    hold: HoldKind | None = None  # what that wait waits for
    outage: Outage | None = None  # the last time its evidence could not be read
    original_replicas: int | None = None
    slack: SlackParent | None = None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def done(self, step: LadderStep) -> StepMark | None:
        """The first mark of ``step``, applied or dry-run."""
        return next((m for m in self.steps if m.step is step), None)


def says_news(rec: SharedEpisode, wait: Wait) -> bool:
    """Whether ``wait`` says something the episode's record has not said yet."""
    if wait.kind is HoldKind.OUTAGE:
        return rec.outage is None or rec.outage.resumed_at is not None
    return (rec.planned, rec.hold) != (wait.reason, wait.kind)


def with_wait(rec: SharedEpisode, wait: Wait, now: float) -> SharedEpisode:
    """The record once ``wait`` is said: what it waits for, and why (and, when it is a
    pending step, the next step and its due time; for an outage, since when)."""
    new = replace(rec, planned=wait.reason, hold=wait.kind, updated_at=now)
    if wait.kind is HoldKind.OUTAGE:
        return replace(new, outage=Outage(now))
    if wait.kind is HoldKind.GAVE_UP:
        return replace(new, next_step=None, next_step_due=None)
    if wait.refused:  # a refusal leaves the next step as it was
        return new
    return replace(new, next_step=wait.next_step, next_step_due=wait.next_step_due)
