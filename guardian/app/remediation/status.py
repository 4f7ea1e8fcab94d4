"""``guardian status``: active alerts, pending ladder steps with due times, reclaimed
workloads with their restore commands, alerts the loop refuses. Read-only, from the
shared state database; with ``live``, also the cluster as it is now (the kill switch,
each reclaimed workload's replicas), read with the standard credentials."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.kube.credentials import api_access, load_api_client
from guardian.adapters.kube.executor import restore_command
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest, NotFound
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.adapters.refused_alerts import RefusedAlertStore
from guardian.app.remediation.build import command_credentials, state_database
from guardian.app.settings.config_file import load_settings
from guardian.app.settings.remediation import RemediationSettings
from guardian.engine.remediation.guards import cluster_wide_why, is_pipeline
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from guardian.model.times import rfc3339
from guardian_common.errors import ConfigError, PermanentError


@dataclass
class StatusReport:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    reclaimed: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    holds: list[dict[str, Any]] = field(default_factory=list)
    live: dict[str, Any] | None = None  # read from the cluster; None: not asked for
    reclaimed_refs: list[WorkloadRef] = field(default_factory=list)  # as ``reclaimed``

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "alerts": self.alerts,
            "pending": self.pending,
            "reclaimed": self.reclaimed,
            "refused": self.refused,
            "holds": self.holds,
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
        node = labels.get("node", "")
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


def _last(events: list[RemediationEvent]) -> RemediationEvent | None:
    return events[-1] if events else None


def build_status(ledger: Ledger) -> StatusReport:
    alerts = _alerts(ledger)
    report = StatusReport(alerts=alerts, refused=_refused(ledger), holds=_holds(alerts))
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
        report.reclaimed_refs.append(ref)
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


def add_live(report: StatusReport, reader: KubeReader, controller_namespace: str) -> None:
    """The cluster as it is now: the kill switch and each reclaimed workload's state.
    API failures propagate (the caller turns them into one line)."""
    ns = reader.namespace(controller_namespace)
    switch = ns is not None and ns.annotations.get(Annotations.KILL_SWITCH, "") == "true"
    where = f"annotation {Annotations.KILL_SWITCH} on namespace {controller_namespace}"
    report.live = {
        "api": str(reader.rest.api_client.configuration.host),
        "kill_switch": f"on ({where})" if switch else f"off ({where} not true)",
    }
    for row, ref in zip(report.reclaimed, report.reclaimed_refs, strict=True):
        row["now"] = _workload_now(reader, ref)


def _workload_now(reader: KubeReader, ref: WorkloadRef) -> str:
    try:
        ws = reader.workload(ref)
    except NotFound:
        return "deleted"
    if ws.replicas is not None:
        state = f"{ws.replicas} replicas"
    else:
        state = "suspended" if ws.suspended else "running"
    marked = Annotations.RECLAIMED_AT in ws.annotations
    return f"{state}, {'still reclaimed' if marked else 'no longer marked reclaimed'}"


@dataclass(frozen=True)
class StatusRequest:
    state: str | None
    config: str | None
    live: bool = False  # also read the cluster
    kubeconfig: str | None = None
    context: str | None = None


def run_status(request: StatusRequest, env: Mapping[str, str]) -> StatusReport:
    """The report; with ``live`` (or a kubeconfig or context given) the cluster's part
    too. Credential and API failures raise KubeAccessError."""
    path = state_database(request.state, request.config, env)
    if path is None:
        raise ConfigError("give --config or --state")
    report = read_status(path)
    if not (request.live or request.kubeconfig or request.context):
        return report
    credentials = command_credentials(request.kubeconfig, request.context, request.config, env)
    namespace = (
        load_settings(request.config, env).remediation.controller_namespace
        if request.config
        else RemediationSettings().controller_namespace
    )
    api_client = load_api_client(credentials, retries=0)
    try:
        with api_access(api_client):
            add_live(report, KubeReader(KubeRest(api_client)), namespace)
    finally:
        api_client.close()
    return report
