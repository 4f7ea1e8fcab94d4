"""Which workload each alert is about: the root owner of its pod, read from the cluster."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from guardian.engine.remediation.guards import is_pipeline, pod_mismatch
from guardian.model.reclaim import ClusterSnapshot, FiringAlert, Wait
from guardian.model.remediation_events import WorkloadRef


def by_root(
    alerts: Iterable[FiringAlert], snapshot: ClusterSnapshot, waits: list[Wait]
) -> dict[WorkloadRef, list[FiringAlert]]:
    """The firing alerts by the root workload of their pod; an alert that leads to none
    is a Wait in ``waits``."""
    roots: dict[WorkloadRef, list[FiringAlert]] = defaultdict(list)
    for alert in alerts:
        ns, pod = alert.labels.get("namespace"), alert.labels.get("pod")
        if not ns or not pod:
            unlabelled = f"{alert.alertname} has no namespace/pod labels"
            waits.append(Wait(None, unlabelled, alert_labels=alert.labels))
            continue
        owner = snapshot.pod_owners.get((ns, pod))
        if owner is None or owner.root is None:
            why = owner.error if owner is not None and owner.error else "pod not found"
            unowned = f"pod {ns}/{pod}: {why}"
            waits.append(Wait(None, unowned, alert_labels=alert.labels, refused=False))
            continue
        mismatch = pod_mismatch(alert.labels, owner)
        if mismatch is not None:
            waits.append(Wait(None, f"pod {ns}/{pod}: {mismatch}", alert_labels=alert.labels))
            continue
        roots[owner.root].append(alert)  # shared roots are deduplicated here
    return roots


def pending_roots(alerts: Iterable[FiringAlert], snapshot: ClusterSnapshot) -> set[WorkloadRef]:
    """Roots of pending (not yet firing) alerts: they keep their episode open."""
    found = set()
    for alert in alerts:
        if alert.firing or is_pipeline(alert.labels):
            continue
        owner = snapshot.pod_owners.get(
            (alert.labels.get("namespace", ""), alert.labels.get("pod", ""))
        )
        if owner is not None and owner.root is not None:
            found.add(owner.root)
    return found
