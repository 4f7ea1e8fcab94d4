"""What to send for each change of an episode: the message operations, with idempotency keys.

One thread per episode (or per group of episodes): the first change posts the parent,
every later change updates the parent and adds a history reply. In webhook mode nothing
can be updated, so each change posts a fresh message with the whole state. Pure: the
planner (``planner.py``) feeds in what it knows (announced? grouped?) and plans the ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from guardian.engine.notify.pipeline import is_pipeline
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.evidence_picture import PictureRequest
from guardian.model.notifications import Finding, GroupSummary, HistoryEntry, Phase
from guardian.model.remediation_events import RemediationEvent, episode_id


class OpKind(StrEnum):
    POST = "post"  # a new parent message
    UPDATE = "update"  # rewrite the parent
    REPLY = "reply"  # a reply in the parent's thread
    PICTURE = "picture"  # the evidence as a picture, uploaded into the thread


@dataclass(frozen=True)
class Op:
    """One message operation. Content: ``summary`` (a group's parent), ``finding`` (an
    episode's parent, or its detail reply in a group's thread), ``entry`` (a history reply)."""

    kind: OpKind
    thread: str
    idem: str
    finding: Finding | None = None
    summary: GroupSummary | None = None
    entry: HistoryEntry | None = None
    reminder: bool = False
    picture: PictureRequest | None = None


def group_key(alertname: str, namespace: str, cycle_at: float) -> str:
    return f"group:{alertname}:{namespace}:{int(cycle_at)}"


@dataclass(frozen=True)
class EpisodeChange:
    """One change of one episode: the finding after it, its history line, and the key its
    operations' idempotency keys start with."""

    after: Finding
    entry: HistoryEntry
    idem: str


def plan_change(
    change: EpisodeChange,
    *,
    thread: str,
    announced: bool,
    summary: GroupSummary | None,
    webhook: bool,
) -> list[Op]:
    """The ops for one change of one episode. ``summary`` is set for a grouped episode."""
    after, entry, idem = change.after, change.entry, change.idem
    if not announced:
        if not after.open and after.phase is Phase.RESOLVED:
            return []  # it came and went without anyone being told (e.g. muted): stay quiet
        if summary is not None:
            # A group's parent (plan_group) lists the episode; its details go in the thread.
            # A webhook has no thread: the summary alone announces the group.
            return [] if webhook else [Op(OpKind.REPLY, thread, f"{idem}:detail", finding=after)]
        return [Op(OpKind.POST, thread, f"{idem}:post", finding=after)]
    if webhook:
        return [Op(OpKind.POST, thread, f"{idem}:post", finding=after, entry=entry)]
    parent = (
        Op(OpKind.UPDATE, thread, f"{idem}:update", summary=summary)
        if summary is not None
        else Op(OpKind.UPDATE, thread, f"{idem}:update", finding=after)
    )
    return [parent, Op(OpKind.REPLY, thread, f"{idem}:reply", finding=after, entry=entry)]


def plan_group(summary: GroupSummary, *, webhook: bool) -> list[Op]:
    """A new group: the summary parent; members' details follow through ``plan_change``."""
    return [Op(OpKind.POST, summary.key, f"{summary.key}:post", summary=summary)]


def plan_reminder(
    *, thread: str, finding: Finding, number: int, summary: GroupSummary | None, webhook: bool
) -> list[Op]:
    """Still wasting (a pipeline alert: still firing) after another repeat interval:
    refresh the parent and say so."""
    idem = f"{finding.episode}:remind:{number}"
    entry = HistoryEntry(
        finding.updated_at,
        finding.phase,
        "Reminder: still firing." if is_pipeline(finding.labels) else "Reminder: still idle.",
        next_step=finding.next_step,
        next_step_due=finding.next_step_due,
    )
    if webhook:
        return [
            Op(OpKind.POST, thread, f"{idem}:post", finding=finding, entry=entry, reminder=True)
        ]
    parent = (
        Op(OpKind.UPDATE, thread, f"{idem}:update", summary=summary)
        if summary is not None
        else Op(OpKind.UPDATE, thread, f"{idem}:update", finding=finding)
    )
    return [parent, Op(OpKind.REPLY, thread, f"{idem}:reply", finding=finding, entry=entry)]


def transition_idem(t: AlertTransition) -> str:
    # An episode fires once and resolves once; a replayed transition maps to the same key.
    return f"{episode_id(t.labels, t.active_at)}:alert:{t.kind.value}"


def event_idem(e: RemediationEvent) -> str:
    # One outcome of one ladder step at one time; a replayed ledger event maps to the same key.
    return f"{e.episode}:step:{e.step.value}:{e.outcome.value}:{e.at:.3f}"


def unmute_idem(finding: Finding) -> str:
    return f"{finding.episode}:unmute:{finding.updated_at:.3f}"


def groups_in_cycle(
    transitions: Iterable[AlertTransition], known: set[str], min_alerts: int
) -> dict[tuple[str, str], list[AlertTransition]]:
    """New firing episodes of one rule and namespace, when at least ``min_alerts`` of them
    fire in one batch (one evaluation cycle). Alerts without a namespace are never grouped."""
    buckets: dict[tuple[str, str], list[AlertTransition]] = {}
    for t in transitions:
        if t.kind is not TransitionKind.FIRING or "namespace" not in t.labels:
            continue
        if episode_id(t.labels, t.active_at) in known:
            continue
        buckets.setdefault((t.alertname, t.labels["namespace"]), []).append(t)
    return {k: v for k, v in buckets.items() if len(v) >= min_alerts}


def reminder_due(
    finding: Finding, last_notified_at: float, now: float, repeat_interval: float
) -> bool:
    return finding.open and now - last_notified_at >= repeat_interval


def summarise(
    key: str, alertname: str, namespace: str, findings: Sequence[Finding], now: float
) -> GroupSummary:
    severities = sorted({f.severity for f in findings})
    return GroupSummary(
        key=key,
        alertname=alertname,
        namespace=namespace,
        severity=severities[0] if len(severities) == 1 else "/".join(severities),
        findings=tuple(sorted(findings, key=lambda f: (f.pod or "", f.episode))),
        updated_at=now,
    )
