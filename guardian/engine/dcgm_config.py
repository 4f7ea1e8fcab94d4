"""Configuration that gives dcgm-exporter users the same ``gpu_group`` label as our exporter.

Four outputs, all pure data (the CLI serializes them):

1. the dcgm-exporter container env that turns on pod labels with an allowlist;
2. a Prometheus scrape config (kubernetes_sd, pod role) for dcgm-exporter and our exporter;
3. prometheus-operator PodMonitor or ServiceMonitor objects with the same relabelling;
4. the RBAC dcgm-exporter needs to read pod labels.

The relabelling copies the sanitized group label into ``gpu_group`` and fills
the default bucket only on series that belong to a pod, so free GPUs are not
counted against an "unassigned" team.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from guardian_common.grouping import GROUP_LABEL, GroupingError, GroupingOptions, sanitize_label_key

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-guardian"}


class OutputFormat(StrEnum):
    ENV = "env"
    PROMETHEUS = "prometheus"
    PODMONITOR = "podmonitor"
    SERVICEMONITOR = "servicemonitor"
    RBAC = "rbac"


class ClusterLabelVia(StrEnum):
    EXTERNAL_LABELS = "external-labels"
    RELABEL = "relabel"


class ServiceDiscovery(StrEnum):
    KUBERNETES = "kubernetes"  # pod role, for Prometheus running in the cluster
    FILE = "file"  # a file_sd file listing the exporters, for Prometheus outside it


class GpuSharing(StrEnum):
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    DRA = "dra"


@dataclass(frozen=True)
class ScrapeTarget:
    """Where one exporter runs and how its pods and Service are selected."""

    job: str
    namespace: str
    pod_labels: Mapping[str, str]
    pod_port: str
    service_port: str
    sets_group_itself: bool  # our exporter already emits gpu_group


DCGM_TARGET = ScrapeTarget(
    job="dcgm-exporter",
    namespace="gpu-operator",
    pod_labels={"app": "nvidia-dcgm-exporter"},
    pod_port="metrics",
    service_port="gpu-metrics",
    sets_group_itself=False,
)
GUARDIAN_TARGET = ScrapeTarget(
    job="gpu-guardian-exporter",
    namespace="gpu-guardian",
    pod_labels={"app.kubernetes.io/name": "gpu-guardian-exporter"},
    pod_port="metrics",
    service_port="metrics",
    sets_group_itself=True,
)


@dataclass(frozen=True)
class DcgmConfigRequest:
    grouping: GroupingOptions
    dcgm: ScrapeTarget = DCGM_TARGET
    guardian: ScrapeTarget = GUARDIAN_TARGET
    dcgm_service_account: str = "nvidia-dcgm-exporter"
    scrape_interval: str = "30s"
    cluster_via: ClusterLabelVia = ClusterLabelVia.EXTERNAL_LABELS
    service_discovery: ServiceDiscovery = ServiceDiscovery.KUBERNETES
    file_sd_dir: str = "/etc/prometheus/file_sd"
    sharing: frozenset[GpuSharing] = field(default_factory=frozenset)

    @property
    def targets(self) -> tuple[ScrapeTarget, ScrapeTarget]:
        return (self.dcgm, self.guardian)


@dataclass(frozen=True)
class RelabelRule:
    """One relabel step, neutral between Prometheus (snake_case) and the operator (camelCase)."""

    target_label: str
    replacement: str
    source_labels: tuple[str, ...] = ()
    regex: str | None = None
    separator: str | None = None
    action: str = "replace"

    def as_prometheus(self) -> dict[str, Any]:
        return self._render("source_labels", "target_label")

    def as_operator(self) -> dict[str, Any]:
        return self._render("sourceLabels", "targetLabel")

    def _render(self, sources_key: str, target_key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.source_labels:
            out[sources_key] = list(self.source_labels)
        if self.separator is not None:
            out["separator"] = self.separator
        if self.regex is not None:
            out["regex"] = self.regex
        out[target_key] = self.target_label
        out["replacement"] = self.replacement
        out["action"] = self.action
        return out


def _literal(value: str) -> str:
    # Relabel replacements expand $1 and ${name}; a literal `$` must be doubled.
    return value.replace("$", "$$")


def dcgm_env(request: DcgmConfigRequest) -> list[dict[str, str]]:
    """The env entries for the dcgm-exporter container."""
    regex = request.grouping.allowlist_regex
    if "," in regex:
        raise GroupingError(
            f"groupLabelAllowlistRegex: {regex!r} contains a comma; dcgm-exporter splits this "
            "variable on commas, so the pattern would be broken apart. Rewrite it without a comma "
            "(for example use alternation instead of {m,n})"
        )
    return [
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "value": "true"},
        {"name": "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", "value": regex},
    ]


def metric_relabel_rules(request: DcgmConfigRequest, target: ScrapeTarget) -> list[RelabelRule]:
    grouping = request.grouping
    rules: list[RelabelRule] = []
    if not target.sets_group_itself:
        rules.append(
            RelabelRule(
                source_labels=(grouping.group_label_name,),
                regex="(.+)",
                target_label=GROUP_LABEL,
                replacement="$1",
            )
        )
        rules.append(
            RelabelRule(
                # Only a series that names a pod gets the default bucket; a free
                # GPU has no pod and no group.
                source_labels=(GROUP_LABEL, "pod"),
                separator=";",
                regex=";.+",
                target_label=GROUP_LABEL,
                replacement=_literal(grouping.default_group),
            )
        )
    if grouping.cluster_name and request.cluster_via is ClusterLabelVia.RELABEL:
        rules.append(
            RelabelRule(
                # Set only where the series has no cluster of its own.
                source_labels=("cluster",),
                regex="^$",
                target_label="cluster",
                replacement=_literal(grouping.cluster_name),
            )
        )
    return rules


# Target labels that name the *exporter's* pod. Left on the target they would
# be attached to series of GPUs that no pod holds, and those GPUs would then be
# charged to the exporter's pod and the default group.
_EXPORTER_IDENTITY = "pod|namespace|container"


def _target_relabels(target: ScrapeTarget) -> list[dict[str, Any]]:
    keep = [
        {
            "source_labels": [f"__meta_kubernetes_pod_label_{sanitize_label_key(key)}"],
            "regex": value,
            "action": "keep",
        }
        for key, value in sorted(target.pod_labels.items())
    ]
    keep.append(
        {
            "source_labels": ["__meta_kubernetes_pod_container_port_name"],
            "regex": target.pod_port,
            "action": "keep",
        }
    )
    keep.append({"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"})
    keep.append({"regex": _EXPORTER_IDENTITY, "action": "labeldrop"})
    return keep


def prometheus_config(request: DcgmConfigRequest) -> dict[str, Any]:
    """A prometheus.yml fragment: global external labels and one scrape job per exporter."""
    config: dict[str, Any] = {}
    cluster = request.grouping.cluster_name
    if cluster and request.cluster_via is ClusterLabelVia.EXTERNAL_LABELS:
        config["global"] = {"external_labels": {"cluster": cluster}}
    config["scrape_configs"] = [_scrape_job(request, target) for target in request.targets]
    return config


def _scrape_job(request: DcgmConfigRequest, target: ScrapeTarget) -> dict[str, Any]:
    job: dict[str, Any] = {
        "job_name": target.job,
        "scrape_interval": request.scrape_interval,
        # Keep the workload's pod/namespace labels instead of exported_pod.
        "honor_labels": True,
    }
    if request.service_discovery is ServiceDiscovery.KUBERNETES:
        job["kubernetes_sd_configs"] = [
            {"role": "pod", "namespaces": {"names": [target.namespace]}}
        ]
        job["relabel_configs"] = _target_relabels(target)
    else:
        # The file lists exactly the exporter endpoints, each with its `node` label.
        job["file_sd_configs"] = [{"files": [f"{request.file_sd_dir}/{target.job}.json"]}]
        job["relabel_configs"] = [{"regex": _EXPORTER_IDENTITY, "action": "labeldrop"}]
    job["metric_relabel_configs"] = [
        rule.as_prometheus() for rule in metric_relabel_rules(request, target)
    ]
    return job


def _operator_node_relabel() -> list[dict[str, Any]]:
    # The operator adds the exporter's own pod/namespace/container as target labels.
    return [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
        {"regex": _EXPORTER_IDENTITY, "action": "labeldrop"},
    ]


def _monitor(
    request: DcgmConfigRequest, target: ScrapeTarget, kind: str, endpoints_key: str, port: str
) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": kind,
        "metadata": {
            "name": f"{target.job}-gpu-group",
            "namespace": target.namespace,
            "labels": dict(MANAGED_BY),
        },
        "spec": {
            "selector": {"matchLabels": dict(target.pod_labels)},
            "namespaceSelector": {"matchNames": [target.namespace]},
            endpoints_key: [_operator_endpoint(request, target, port)],
        },
    }


def pod_monitors(request: DcgmConfigRequest) -> list[dict[str, Any]]:
    return [
        _monitor(request, t, "PodMonitor", "podMetricsEndpoints", t.pod_port)
        for t in request.targets
    ]


def service_monitors(request: DcgmConfigRequest) -> list[dict[str, Any]]:
    return [
        _monitor(request, t, "ServiceMonitor", "endpoints", t.service_port) for t in request.targets
    ]


def _operator_endpoint(
    request: DcgmConfigRequest, target: ScrapeTarget, port: str
) -> dict[str, Any]:
    return {
        "port": port,
        "path": "/metrics",
        "interval": request.scrape_interval,
        "honorLabels": True,
        "relabelings": _operator_node_relabel(),
        "metricRelabelings": [rule.as_operator() for rule in metric_relabel_rules(request, target)],
    }


def dcgm_rbac(request: DcgmConfigRequest) -> list[dict[str, Any]]:
    """Read access to pods, which dcgm-exporter's pod-label informer needs; nothing more."""
    name = "dcgm-exporter-pod-labels"
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": request.dcgm_service_account,
                    "namespace": request.dcgm.namespace,
                }
            ],
        },
    ]


def warnings_for(request: DcgmConfigRequest, fmt: OutputFormat) -> list[str]:
    """Situations in which the generated dcgm-exporter config cannot deliver gpu_group."""
    notes = [
        f"GPU sharing via {sharing} is configured: dcgm-exporter attaches pod labels only to "
        "exclusively allocated GPUs, so shared GPUs get no gpu_group. Use the "
        "gpu-guardian exporter on those nodes instead."
        for sharing in sorted(request.sharing)
    ]
    cluster = request.grouping.cluster_name
    monitors = (OutputFormat.PODMONITOR, OutputFormat.SERVICEMONITOR)
    if cluster and request.cluster_via is ClusterLabelVia.EXTERNAL_LABELS and fmt in monitors:
        notes.append(
            f"cluster={cluster!r} is set through external_labels: with prometheus-operator put "
            "it in the Prometheus object's spec.externalLabels (monitors cannot set external "
            "labels), "
            "or pass --cluster-via relabel"
        )
    return notes


def sharing_from_device_plugin_config(document: Mapping[str, Any]) -> frozenset[GpuSharing]:
    """The sharing modes an NVIDIA device-plugin config file turns on."""
    sharing = document.get("sharing") or {}
    if not isinstance(sharing, Mapping):
        raise GroupingError("device plugin config: 'sharing' must be a mapping")
    found: set[GpuSharing] = set()
    for key, mode in (("timeSlicing", GpuSharing.TIME_SLICING), ("mps", GpuSharing.MPS)):
        section = sharing.get(key) or {}
        if isinstance(section, Mapping) and section.get("resources"):
            found.add(mode)
    return frozenset(found)


def render_objects(request: DcgmConfigRequest, fmt: OutputFormat) -> Sequence[dict[str, Any]]:
    """The objects for one output format, as YAML documents."""
    if fmt is OutputFormat.ENV:
        return [{"env": dcgm_env(request)}]
    if fmt is OutputFormat.PROMETHEUS:
        return [prometheus_config(request)]
    if fmt is OutputFormat.PODMONITOR:
        return pod_monitors(request)
    if fmt is OutputFormat.SERVICEMONITOR:
        return service_monitors(request)
    return dcgm_rbac(request)
