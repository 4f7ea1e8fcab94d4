"""``guardian status``: active alerts, pending ladder steps with due times, reclaimed
workloads with their restore commands. Read-only, from the shared state database."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.kube.executor import restore_command
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from guardian.model.times import rfc3339
from guardian_common.errors import PermanentError


@dataclass
class StatusReport:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    reclaimed: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "alerts": self.alerts,
            "pending": self.pending,
            "reclaimed": self.reclaimed,
            "refused": self.refused,
        }

    def render(self) -> str:
        out = [f"Active alerts ({len(self.alerts)}):"]
        for a in self.alerts:
            labels = a["labels"]
            where = f"{labels.get('namespace', '-')}/{labels.get('pod', '-')}"
            out.append(
                f"  {a['state']:<8} {labels.get('alertname', '?'):<26} {where:<40} "
                f"since {a['active_at']}"
            )
        out.append(f"Pending ladder steps ({len(self.pending)}):")
        for p in self.pending:
            due = f"due {p['due']}" if p["due"] else "next cycle"
            mode = " (dry-run)" if p["dry_run"] else ""
            out.append(
                f"  {p['workload']:<48} next {p['next_step']:<8} {due}  policy {p['policy']}"
                f"{mode}  last: {p['last']}"
            )
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
            out.append(f"    restore: {r['restore_command']}")
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


def _last(events: list[RemediationEvent]) -> RemediationEvent | None:
    return events[-1] if events else None


def build_status(ledger: Ledger) -> StatusReport:
    report = StatusReport(alerts=_alerts(ledger), refused=_refused(ledger))
    for episode in ledger.episodes(EpisodeState.OPEN):
        events = ledger.events_for([episode.episode])
        last = _last(events)
        planned = [e for e in events if e.next_step is not None]
        nxt = planned[-1] if planned else None
        report.pending.append(
            {
                "workload": str(episode.workload),
                "episode": episode.episode,
                "policy": episode.policy,
                "next_step": (nxt.next_step.value if nxt and nxt.next_step else "notify"),
                "due": rfc3339(nxt.next_step_due) if nxt and nxt.next_step_due else None,
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
        report.reclaimed.append(
            {
                "workload": str(ref),
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
