"""Guards every step passes: exclusions, snoozes, warm-up and pipeline health.

Each returns None when the step may go ahead, else the reason it may not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from guardian.model.alerts import GroupEvaluation
from guardian.model.labels import node_of
from guardian.model.policies import ALWAYS_EXCLUDED_NAMESPACES, Annotations, ReclaimPolicy
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    NamespaceState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import WorkloadRef
from guardian.model.suppressions import Suppressions
from guardian.model.times import parse_rfc3339, rfc3339


def is_pipeline(labels: Mapping[str, str]) -> bool:
    """Rules and alerts labelled ``guardian_class: pipeline`` watch the metrics pipeline."""
    return labels.get("guardian_class") == "pipeline"


def group_health(evaluation: GroupEvaluation) -> GroupHealth:
    """A group's health as the loop records it: healthy only if every rule's evaluation was
    actionable."""
    bad = [o for o in evaluation.outcomes if not o.health.actionable]
    reason = ""
    if bad:
        first = bad[0]
        reason = f"rule {first.rule}: {first.health.value} ({first.reason or first.error or '?'})"
    return GroupHealth(evaluation.group, evaluation.ts, not bad, reason)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "yes", "1")


_HELD = {Annotations.EXCLUDE_UNTIL: "excluded", Annotations.SNOOZE_UNTIL: "snoozed"}


def _held_until(annotations: Mapping[str, str], key: str, where: str, now: float) -> str | None:
    """``key`` holds a time: until then (or forever, if unreadable) nothing may happen."""
    raw = annotations.get(key)
    if raw is None:
        return None
    what = _HELD[key]
    until = parse_rfc3339(raw)
    if until is None:
        # A typo must not turn an opt-out into an opt-in.
        return f"{where} has an unreadable {key} ({raw!r}): {what}"
    if until > now:
        return f"{where} is {what} until {rfc3339(until)}"
    return None


def _annotation_exclusion(annotations: Mapping[str, str], where: str, now: float) -> str | None:
    if _truthy(annotations.get(Annotations.EXCLUDE)):
        return f"{where} has {Annotations.EXCLUDE}=true"
    return _held_until(annotations, Annotations.EXCLUDE_UNTIL, where, now)


def exclusion_requested(
    workload: WorkloadState, namespace: NamespaceState | None, now: float
) -> str | None:
    """The exclude annotations only (on the workload or its namespace): they also restore."""
    found = _annotation_exclusion(workload.annotations, "the workload", now)
    if found is None and namespace is not None:
        found = _annotation_exclusion(namespace.annotations, f"namespace {namespace.name}", now)
    return found


def exclusion_reason(
    workload: WorkloadState,
    namespace: NamespaceState | None,
    policy: ReclaimPolicy | None,
    controller_namespace: str,
    now: float,
) -> str | None:
    """Why nothing may touch ``workload``, or None. Exclusions always win over policies."""
    ns = workload.ref.namespace
    if ns in ALWAYS_EXCLUDED_NAMESPACES:
        return f"namespace {ns} is always excluded"
    if ns == controller_namespace:
        return f"namespace {ns} is the controller's own"
    found = exclusion_requested(workload, namespace, now)
    if found is None:
        found = _held_until(workload.annotations, Annotations.SNOOZE_UNTIL, "the workload", now)
    if found is None and namespace is not None:
        where = f"namespace {ns}"
        found = _held_until(namespace.annotations, Annotations.SNOOZE_UNTIL, where, now)
    if found is None and policy is not None:
        excl = policy.spec.exclusions
        if ns in excl.namespaces:
            found = f"policy {policy.name} excludes namespace {ns}"
        elif excl.workload_selector is not None and excl.workload_selector.matches(
            dict(workload.labels)
        ):
            found = f"policy {policy.name} excludes workloads with these labels"
    return found


def warmup_reason(workload: WorkloadState, warmup: float, now: float) -> str | None:
    """A new (or just restored) workload gets ``warmup`` seconds before any step."""
    restored = parse_rfc3339(workload.annotations.get(Annotations.RESTORED_AT))
    since = max(workload.created_at, restored or 0.0)
    if now - since < warmup:
        what = "restored" if restored and restored >= workload.created_at else "created"
        return f"warming up: {what} at {rfc3339(since)}, no step before {rfc3339(since + warmup)}"
    return None


def pipeline_reason(
    alerts: Iterable[FiringAlert],
    pipeline_alerts: Iterable[FiringAlert],
    health: Mapping[str, GroupHealth],
    required_groups: Iterable[str],
    now: float,
    max_age: float,
) -> str | None:
    """Missing data is not idleness: why the metrics behind ``alerts`` cannot be trusted now.

    Blocks on a pending or firing pipeline alert (stale exporter, gap, exporter down, ...)
    for the alert's node; one that names no node holds its whole cluster, and the reason
    says so. Also blocks on any required rule group (the alert's own, the pipeline
    groups) whose last evaluation failed, was partial, or is older than ``max_age``.
    """
    alerts = list(alerts)
    pipeline = list(pipeline_alerts)
    for alert in alerts:
        for problem in pipeline:
            if not _same_cluster(alert, problem):
                continue
            p_node = node_of(problem.labels)
            if p_node and p_node != node_of(alert.labels):
                continue
            state = f"{problem.alertname} is {'firing' if problem.firing else 'pending'}"
            if p_node:
                return f"missing data is not idleness: {state} for node {p_node}"
            why = cluster_wide_why(problem)
            return f"missing data is not idleness: {state} for its cluster ({why})"
    groups = {a.group for a in alerts if a.group} | set(required_groups)
    stale = unevaluated(groups, health, now, max_age)
    return f"missing data is not idleness: {stale}" if stale else None


def unevaluated(
    groups: Iterable[str], health: Mapping[str, GroupHealth], now: float, max_age: float
) -> str | None:
    """Why one of ``groups`` has no healthy, recent evaluation to go by, or None."""
    for group in sorted(groups):
        last = health.get(group)
        if last is None:
            return f"rule group {group} has not been evaluated yet"
        if not last.healthy:
            return f"rule group {group}: {last.reason or 'unhealthy'}"
        if now - last.ts > max_age:
            return f"rule group {group} last evaluated {now - last.ts:.0f}s ago"
    return None


def _same_cluster(alert: FiringAlert, problem: FiringAlert) -> bool:
    """A pipeline alert without ``cluster`` may be about any cluster the alerts are."""
    mine, theirs = alert.labels.get("cluster", ""), problem.labels.get("cluster", "")
    return not mine or not theirs or mine == theirs


# Labels that say which scrape target or component a node-less pipeline alert is about.
_SUBJECT_LABELS = ("reason", "job", "instance", "remote_name", "group", "rule")


def cluster_wide_why(problem: FiringAlert) -> str:
    """Why a pipeline alert holds a whole cluster: it names no node, and what it names."""
    labels = problem.labels
    cluster = labels.get("cluster", "")
    named = ", ".join(f"{k}={labels[k]}" for k in _SUBJECT_LABELS if labels.get(k))
    about = f" ({named})" if named else ""
    where = f"cluster {cluster}" if cluster else "the cluster"
    return (
        f"cluster-wide hold: {problem.alertname}{about} names no node, so the data of every "
        f"node in {where} is in doubt"
    )


def pod_mismatch(labels: Mapping[str, str], owner: PodOwner) -> str | None:
    """Why the pod read from the cluster is not the one the alert's evidence is about
    (another cluster's, or replaced by a same-named pod since), or None."""
    node = node_of(labels)
    if node and owner.node is not None and owner.node != node:
        runs = f"runs on node {owner.node}" if owner.node else "is not scheduled on any node"
        return (
            f"the alert is about node {node} but the pod of that name {runs}: "
            "not the pod the evidence is about"
        )
    uid = labels.get("pod_uid", "")
    if uid and owner.uid is not None and owner.uid != uid:
        return (
            f"the alert is about pod UID {uid} but the pod of that name has UID {owner.uid}: "
            "replaced since the evidence was gathered"
        )
    return None


def silence_reason(
    alerts: Iterable[FiringAlert], suppressions: Suppressions, policy: ReclaimPolicy
) -> str | None:
    """Why Alertmanager holds the ladder for ``alerts``: one of them silenced, inhibited
    or unknown to it (see guardian/engine/alertmanager/suppression.py), or None. Policies
    with ``respectSilences: false`` are not held."""
    if not policy.spec.respect_silences:
        return None
    for alert in sorted(alerts, key=lambda a: a.labels.items_sorted):
        reason = suppressions.reason(alert.labels)
        if reason is not None:
            return reason
    return None


def read_error(snapshot: ClusterSnapshot, ref: WorkloadRef) -> str | None:
    prefix = f"{ref}: "
    return next((e[len(prefix) :] for e in snapshot.errors if e.startswith(prefix)), None)


def episode_over(ref: WorkloadRef, snapshot: ClusterSnapshot, alerting: bool) -> bool:
    """An open episode ends when its workload is gone, or its alerts ended before a
    reclaim. A reclaimed workload's episode lasts until it is restored."""
    if read_error(snapshot, ref) is not None:
        return False  # unknown: keep it
    ws = snapshot.workloads.get(ref)
    if ws is None:
        return True  # deleted
    return not alerting and Annotations.RECLAIMED_AT not in ws.annotations


def restarted_by_hand(ws: WorkloadState) -> str | None:
    """A reclaimed workload someone started again by hand: clear our marks (a restore
    that leaves its replicas alone), so the ladder can start over after a warm-up."""
    kept = ws.annotations.get(Annotations.RIGHT_SIZED_TO, "")
    if kept:  # a right-size left some replicas: only another count is a change by hand
        if str(ws.replicas) != kept:
            return f"scaled to {ws.replicas} by hand since the right-size to {kept}"
        return None
    if ws.action in (ActionKind.SCALE, ActionKind.SCALE_SUBRESOURCE) and ws.replicas:
        return f"scaled to {ws.replicas} by hand since the reclaim"
    if ws.action is ActionKind.SUSPEND and not ws.suspended:
        return "unsuspended by hand since the reclaim"
    if ws.action is ActionKind.NOTEBOOK and not ws.suspended:
        return "notebook started by hand since the reclaim"
    return None
