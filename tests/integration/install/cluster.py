"""A cluster for the install test: the fake API server (testbed/kubeapi) serving every
kind the manifests hold, with what kube-prometheus-stack would have installed first
(the prometheus-operator's CRDs, the `monitoring` namespace)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from testbed.kubeapi import FakeKubeAPI, ResourceType

REPO = Path(__file__).resolve().parents[3]
NAMESPACES = ("default", "kube-system", "monitoring")

# Built-in kinds of the manifests the fake does not serve on its own; stored as given.
MANIFEST_KINDS = (
    ResourceType(
        "", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",), has_status=False
    ),
    ResourceType("", "v1", "Service", "services", short_names=("svc",)),
    ResourceType("", "v1", "Secret", "secrets", has_status=False),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", short_names=("ds",)),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        short_names=("netpol",),
        has_status=False,
    ),
    ResourceType(
        "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", short_names=("pdb",)
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        namespaced=False,
        has_status=False,
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        namespaced=False,
        has_status=False,
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", has_status=False),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", has_status=False
    ),
)


def _monitor_crd(kind: str, plural: str) -> dict[str, Any]:
    """A prometheus-operator CRD as kube-prometheus-stack installs it (schema loosened: the
    manifest tests check the monitors against what they select)."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def prometheus_operator_crds() -> list[dict[str, Any]]:
    rule_crd = yaml.safe_load(
        (REPO / "manifests/schemas/monitoring.coreos.com_prometheusrules.yaml").read_text()
    )
    return [
        copy.deepcopy(rule_crd),
        _monitor_crd("PodMonitor", "podmonitors"),
        _monitor_crd("ServiceMonitor", "servicemonitors"),
    ]


def start_cluster() -> FakeKubeAPI:
    api = FakeKubeAPI.start(namespaces=NAMESPACES, extra_resources=MANIFEST_KINDS)
    for crd in prometheus_operator_crds():
        api.create(crd)
    return api
