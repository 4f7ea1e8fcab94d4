"""Remediation metrics: steps by policy, step and outcome; API refusals. No per-pod labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class RemediationMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.steps = Counter(
            "guardian_remediation_steps_total",
            "Remediation ladder steps by policy, step and outcome.",
            ["policy", "step", "outcome"],
            registry=self.registry,
        )
        self.api_forbidden = Counter(
            "guardian_remediation_api_forbidden_total",
            "Kubernetes API calls refused with 403: RBAC is missing a permission.",
            registry=self.registry,
        )
        self.conflicts = Counter(
            "guardian_remediation_conflicts_total",
            "409 Conflicts that made the planner read again and re-plan.",
            registry=self.registry,
        )
        self.waits = Gauge(
            "guardian_remediation_waiting_workloads",
            "Workloads the last cycle did not act on, refused by a guard.",
            registry=self.registry,
        )
        self.refused_alerts = Gauge(
            "guardian_remediation_refused_alerts",
            "Alerts the last cycle refused to act on: another cluster's, without a cluster "
            "where the source serves several, or naming a pod that is not the one read.",
            ["reason"],
            registry=self.registry,
        )
        self.cluster_misconfigured = Gauge(
            "guardian_remediation_cluster_misconfigured",
            "1: the configured cluster name contradicts the cluster UIDs the source's "
            "exporters report (guardian status says how).",
            registry=self.registry,
        )
        self.cycles = Counter(
            "guardian_remediation_cycles_total", "Planner cycles run.", registry=self.registry
        )
