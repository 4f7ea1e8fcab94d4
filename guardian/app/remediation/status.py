"""``guardian status``: active alerts, pending ladder steps with due times, reclaimed
workloads with their restore commands, alerts the loop refuses. Read-only.

The ladder's part comes from the episode state every replica shares (in the cluster,
adapters/kube/episode_store.py), so the answer does not depend on which replica gives
it; the alerts from this replica's engine (every replica evaluates the same rules on the
same slots). ``build_status`` without shared episodes reads one state database alone.
Reading the cluster (shared episodes, ``--live``) is status_cluster.py's."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.kube.executor import restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.app.remediation.clusters import misconfigured_status
from guardian.engine.remediation.guards import cluster_wide_why, is_pipeline
from guardian.model.labels import LabelSet, node_of
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import (
    HoldKind,
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.shared_episode import SharedEpisode
from guardian.model.times import rfc3339
from guardian_common.errors import PermanentError


@dataclass
class StatusReport:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    reclaimed: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    holds: list[dict[str, Any]] = field(default_factory=list)
    misconfigured: list[dict[str, Any]] = field(default_factory=list)  # clusters.py
    gave_up: list[dict[str, Any]] = field(default_factory=list)  # checkpoint never acknowledged
    live: dict[str, Any] | None = None  # read from the cluster; None: not asked for
    reclaimed_refs: list[WorkloadRef] = field(default_factory=list)  # as ``reclaimed``

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "alerts": self.alerts,
            "pending": self.pending,
            "reclaimed": self.reclaimed,
            "refused": self.refused,
            "holds": self.holds,
            "misconfigured": self.misconfigured,
            "gave_up": self.gave_up,
        }
        if self.live is not None:
            out["live"] = self.live
        return out

    def render(self) -> str:
        out = [f"Active alerts ({len(self.alerts)}):"]
        for a in self.alerts:
            labels = a["labels"]
            where = f"{labels.get('namespace', '-')}/{labels.get('pod', '-')}"
            out.append(
                f"  {a['state']:<8} {labels.get('alertname', '?'):<26} {where:<40} "
                f"since {a['active_at']}"
            )
        out.append(f"Remediation holds ({len(self.holds)}):")
        for h in self.holds:
            out.append(f"  {h['state']:<8} {h['alertname']:<26} {h['scope']}")
            if h["why"]:
                out.append(f"    {h['why']}")
        out.append(f"Pending ladder steps ({len(self.pending)}):")
        for p in self.pending:
            mode = " (dry-run)" if p["dry_run"] else ""
            out.append(
                f"  {p['workload']:<48} next {p['next_step']:<8} {p['when']}  policy "
                f"{p['policy']}{mode}  last: {p['last']}"
            )
            if p.get("episode"):
                out.append(f"    episode {p['episode']}")
            if p["why"]:
                out.append(f"    waits for {p['waiting_for']}: {p['why']}")
        out.append(f"Given up ({len(self.gave_up)}):")
        for g in self.gave_up:
            out.append(f"  {g['workload']:<48} policy {g['policy']}: {g['why']}")
            if g.get("episode"):
                out.append(f"    episode {g['episode']}")
        if self.misconfigured:
            out.append(f"Cluster misconfiguration ({len(self.misconfigured)}):")
            out += [f"  since {m['since']}: {m['reason']}" for m in self.misconfigured]
        out.append(f"Alerts refused by the last cycle ({len(self.refused)}):")
        for r in self.refused:
            labels = r["labels"]
            where = f"{labels.get('namespace', '-')}/{labels.get('pod', '-')}"
            cluster = labels.get("cluster") or "(no cluster)"
            out.append(
                f"  {labels.get('alertname', '?'):<26} {where:<40} cluster {cluster:<12} "
                f"since {r['since']}"
            )
            out.append(f"    {r['kind']}: {r['reason']}")
        out.append(f"Reclaimed workloads ({len(self.reclaimed)}):")
        for r in self.reclaimed:
            out.append(
                f"  {r['workload']:<48} at {r['reclaimed_at']} by {r['policy']}, "
                f"original replicas {r['original_replicas']}"
            )
            if r.get("episode"):
                out.append(f"    episode {r['episode']}")
            out.append(f"    restore: {r['restore_command']}")
            if "now" in r:
                out.append(f"    now: {r['now']}")
        if self.live is not None:
            out.append(f"Cluster ({self.live['api']}):")
            out.append(f"  kill switch: {self.live['kill_switch']}")
        return "\n".join(out)


def _alerts(ledger: Ledger) -> list[dict[str, Any]]:
    # The engine's table (adapters/alert_store.py); absent until the engine has run.
    try:
        rows = ledger.db.read(
            "SELECT group_key, labels, state, active_at FROM engine_alerts "
            "WHERE state != 'inactive' ORDER BY active_at"
        )
    except sqlite3.OperationalError:
        return []
    return [
        {
            "group": str(group).rpartition(";")[2] or str(group),
            "labels": dict(json.loads(str(labels))),
            "state": str(state),
            "active_at": rfc3339(float(str(active_at))),
        }
        for group, labels, state, active_at in rows
    ]


def _holds(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pipeline alerts hold the ladder: on their node, or, naming none, cluster-wide."""
    holds = []
    for a in alerts:
        labels = a["labels"]
        if not is_pipeline(labels):
            continue
        node = node_of(labels)
        cluster = labels.get("cluster", "")
        where = f" in cluster {cluster}" if cluster else ""
        problem = FiringAlert(LabelSet(labels), 0.0, a["state"] == "firing")
        holds.append(
            {
                "alertname": labels.get("alertname", "?"),
                "state": a["state"],
                "labels": labels,
                "scope": f"node {node}{where}" if node else f"cluster-wide{where}",
                "why": "" if node else cluster_wide_why(problem),
            }
        )
    return holds


def _refused(ledger: Ledger) -> list[dict[str, Any]]:
    # The loop's table (adapters/refused_alerts.py); absent until remediation has run.
    try:
        rows = RefusedAlertStore(ledger.db).current()
    except sqlite3.OperationalError:
        return []
    return [
        {
            "labels": row.labels.to_dict(),
            "kind": row.refusal,
            "reason": row.reason,
            "since": rfc3339(row.since),
            "last_seen": rfc3339(row.last_seen),
        }
        for row in rows
    ]


@dataclass(frozen=True)
class Pending:
    """An open episode's next step, and what the controller waits for before it."""

    next_step: LadderStep | None
    due: float | None
    hold: HoldKind | None = None
    why: str = ""

    def when(self) -> str:
        """When the next step can come, in the words of what it waits for."""
        due = rfc3339(self.due) if self.due else None
        kind = self.hold
        if kind is HoldKind.DEMAND:
            return "when a Pending pod could use its GPUs"
        if kind is HoldKind.OUTAGE:
            return "when its evidence is back"
        if kind is HoldKind.EVIDENCE:
            return "when all of it is idle"
        if kind is HoldKind.CHECKPOINT and due:
            return f"on acknowledgement, at the latest {due} (checkpoint deadline)"
        if kind is HoldKind.WINDOW and due:
            return f"when the active window opens at {due}"
        if kind is HoldKind.RESUMING:
            return f"proving the idle window until {due}" if due else "after one more evaluation"
        return f"due {due}" if due else "next cycle"

    def fields(self) -> dict[str, Any]:
        return {
            "next_step": self.next_step.value if self.next_step else "notify",
            "due": rfc3339(self.due) if self.due else None,
            "waiting_for": self.hold.value if self.hold else None,
            "why": self.why,
            "when": self.when(),
        }


def _pending_from(events: list[RemediationEvent]) -> Pending:
    """The last recorded wait (with what it waits for) or planned step, from the ledger."""
    for e in reversed(events):
        if e.step is LadderStep.RESUME:
            continue
        if e.hold is not None and e.hold not in (HoldKind.GUARD, HoldKind.STEP):
            nxt = e.next_step if e.hold is not HoldKind.OUTAGE else _next_planned(events)
            return Pending(nxt, e.next_step_due, e.hold, e.reason)
        if e.next_step is not None:
            return Pending(e.next_step, e.next_step_due)
    return Pending(None, None)


def _next_planned(events: list[RemediationEvent]) -> LadderStep | None:
    return next((e.next_step for e in reversed(events) if e.next_step is not None), None)


def _gave_up(workload: str, episode: str, policy: str, why: str) -> dict[str, Any]:
    return {"workload": workload, "episode": episode, "policy": policy, "why": why}


def _last(events: list[RemediationEvent]) -> RemediationEvent | None:
    return events[-1] if events else None


def _last_mark(e: SharedEpisode) -> str:
    if e.inflight is not None:
        f = e.inflight
        return f"{f.step.value} in flight since {rfc3339(f.at)} (attempt {f.attempt}, {f.by})"
    if not e.steps:
        return "-"
    m = e.steps[-1]
    return f"{m.step.value} {m.outcome.value} at {rfc3339(m.at)} by {m.by}"


def shared_status(episodes: Sequence[SharedEpisode], alerts: list[dict[str, Any]]) -> StatusReport:
    """The report from the shared episodes (and ``alerts`` as this replica's engine has them)."""
    report = StatusReport(alerts=alerts, holds=_holds(alerts))
    for e in episodes:
        if e.state is EpisodeState.OPEN and e.hold is HoldKind.GAVE_UP:
            report.gave_up.append(_gave_up(str(e.workload), e.episode, e.policy, e.planned))
        elif e.state is EpisodeState.OPEN:
            row = Pending(e.next_step, e.next_step_due, e.hold, e.planned)
            report.pending.append(
                {
                    "workload": str(e.workload),
                    "episode": e.episode,
                    "policy": e.policy,
                    **row.fields(),
                    "dry_run": any(m.outcome is StepOutcome.DRY_RUN for m in e.steps),
                    "last": _last_mark(e),
                }
            )
        elif e.state is EpisodeState.RECLAIMED:
            mark = e.done(LadderStep.RECLAIM)
            report.reclaimed_refs.append(e.workload)
            report.reclaimed.append(
                {
                    "workload": str(e.workload),
                    "episode": e.episode,
                    "policy": e.policy,
                    "reclaimed_at": rfc3339(mark.at) if mark else "?",
                    "original_replicas": e.original_replicas,
                    "restore_command": restore_command(e.workload),
                }
            )
    return report


def build_status(ledger: Ledger, episodes: Sequence[SharedEpisode] | None = None) -> StatusReport:
    """The report from one state database; with ``episodes`` (RemediationParts.
    shared_episodes()), the ladder's part from the shared state instead, as on any replica."""
    alerts = _alerts(ledger)
    if episodes is not None:
        report = shared_status(episodes, alerts)
        report.refused = _refused(ledger)
        report.misconfigured = misconfigured_status(ledger.db)
        return report
    report = StatusReport(alerts=alerts, refused=_refused(ledger), holds=_holds(alerts))
    report.misconfigured = misconfigured_status(ledger.db)
    for episode in ledger.episodes(EpisodeState.OPEN):
        events = ledger.events_for([episode.episode])
        last = _last(events)
        row = _pending_from(events)
        if row.hold is HoldKind.GAVE_UP:
            why = row.why
            report.gave_up.append(
                _gave_up(str(episode.workload), episode.episode, episode.policy, why)
            )
            continue
        report.pending.append(
            {
                "workload": str(episode.workload),
                "episode": episode.episode,
                "policy": episode.policy,
                **row.fields(),
                "dry_run": any(e.outcome is StepOutcome.DRY_RUN for e in events),
                "last": f"{last.step.value} {last.outcome.value}: {last.reason}" if last else "-",
            }
        )
    for episode in ledger.episodes(EpisodeState.RECLAIMED):
        events = ledger.events_for([episode.episode])
        reclaim = [
            e for e in events if e.step is LadderStep.RECLAIM and e.outcome is StepOutcome.APPLIED
        ]
        event = reclaim[-1] if reclaim else None
        ref = episode.workload
        report.reclaimed_refs.append(ref)
        report.reclaimed.append(
            {
                "workload": str(ref),
                "episode": episode.episode,
                "policy": episode.policy,
                "reclaimed_at": rfc3339(event.at) if event else "?",
                "original_replicas": event.original_replicas if event else None,
                "restore_command": restore_command(ref),
            }
        )
    return report


def read_status(path: str) -> StatusReport:
    """The report from the state database at ``path``, which must exist (never created)."""
    if not Path(path).exists():
        raise PermanentError(f"no state database at {path}")
    ledger = Ledger.open(path)
    try:
        return build_status(ledger)
    finally:
        ledger.close()
