"""Network exposure of the controller: it binds the pod IP, and its NetworkPolicy admits
only Prometheus and the namespace's own pods, on its one port (docs/deploy.md)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import yaml

from .conftest import KUSTOMIZATIONS, Build, Obj

NAME = "gpu-guardian-controller"


def _selects(selector: Obj, labels: dict[str, str]) -> bool:
    expressions = selector.get("matchExpressions", [])
    assert not expressions, "this evaluator reads matchLabels only"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def admits(
    policy: Obj, policy_ns: str, ns_labels: dict[str, str], pod_labels: dict[str, str]
) -> bool:
    """Whether an ingress rule of ``policy`` admits a pod with these labels in a namespace
    with these labels (the API's semantics for podSelector / namespaceSelector peers)."""
    namespace = ns_labels["kubernetes.io/metadata.name"]
    for rule in policy["spec"].get("ingress", []):
        for peer in rule.get("from", []):
            assert "ipBlock" not in peer, "an ipBlock would admit addresses, not pods"
            ns_ok = (
                _selects(peer["namespaceSelector"], ns_labels)
                if "namespaceSelector" in peer
                else namespace == policy_ns
            )
            pod_ok = _selects(peer.get("podSelector", {}), pod_labels)
            if ns_ok and pod_ok:
                return True
    return False


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_network_policy_admits_only_prometheus_and_the_namespace(
    builds: dict[str, Build], name: str
) -> None:
    build = builds[name]
    policy = build.one("NetworkPolicy", NAME)
    template = build.one("Deployment", NAME)["spec"]["template"]
    assert _selects(policy["spec"]["podSelector"], template["metadata"]["labels"])
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ours = policy["metadata"]["namespace"]
    container_ports = {p["name"] for p in template["spec"]["containers"][0]["ports"]}
    for rule in policy["spec"]["ingress"]:
        assert rule["ports"], "every rule names its port"
        assert {p["port"] for p in rule["ports"]} <= container_ports

    def ns(name: str) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": name}

    prometheus = {"app.kubernetes.io/name": "prometheus"}
    assert admits(policy, ours, ns("monitoring"), prometheus)
    assert admits(policy, ours, ns(ours), {"app": "anything"})
    assert not admits(policy, ours, ns("monitoring"), {"app.kubernetes.io/name": "grafana"})
    assert not admits(policy, ours, ns("default"), prometheus)
    assert not admits(policy, ours, ns("default"), {})


def test_the_admitted_prometheus_is_the_one_the_controller_queries(
    builds: dict[str, Build],
) -> None:
    build = builds["base"]
    config = yaml.safe_load(build.configmap("gpu-guardian-config")["data"]["guardian.yaml"])
    host = urlsplit(config["prometheus"]["url"]).hostname or ""
    service, namespace = host.split(".")[:2]  # <service>.<namespace>.svc
    assert service == "prometheus-operated"  # the operator's Service for Prometheus pods
    policy = build.one("NetworkPolicy", NAME)
    peer = policy["spec"]["ingress"][0]["from"][0]
    assert peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": namespace}


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_the_controller_binds_its_pod_ip(builds: dict[str, Build], name: str) -> None:
    container = builds[name].one("Deployment", NAME)["spec"]["template"]["spec"]["containers"][0]
    env = [e["name"] for e in container["env"]]
    listen = next(e for e in container["env"] if e["name"] == "GUARDIAN_LISTEN_ADDRESS")
    pod_ip = next(e for e in container["env"] if e["name"] == "POD_IP")
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert listen["value"].startswith("$(POD_IP):")
    # The kubelet expands $(VAR) only from variables defined before it.
    assert env.index("POD_IP") < env.index("GUARDIAN_LISTEN_ADDRESS")


EXPORTER = "gpu-guardian-exporter"


@pytest.mark.parametrize("name", [k for k in KUSTOMIZATIONS if "dcgm" not in k])
def test_the_exporter_admits_only_prometheus(builds: dict[str, Build], name: str) -> None:
    """Its /metrics names every pod with a GPU and carries their labels: only Prometheus
    may read it, not even the controller's namespace."""
    build = builds[name]
    policy = build.one("NetworkPolicy", EXPORTER)
    template = build.one("DaemonSet", EXPORTER)["spec"]["template"]
    assert template["spec"].get("hostNetwork") is not True  # else the policy would not apply
    assert _selects(policy["spec"]["podSelector"], template["metadata"]["labels"])
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == ["metrics"]
    assert {p["name"] for p in template["spec"]["containers"][0]["ports"]} == {"metrics"}
    ours = policy["metadata"]["namespace"]

    def ns(name: str) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": name}

    prometheus = {"app.kubernetes.io/name": "prometheus"}
    assert admits(policy, ours, ns("monitoring"), prometheus)
    assert not admits(policy, ours, ns(ours), {"app.kubernetes.io/name": "gpu-guardian-controller"})
    assert not admits(policy, ours, ns(ours), {})
    assert not admits(policy, ours, ns("monitoring"), {"app.kubernetes.io/name": "grafana"})
    assert not admits(policy, ours, ns("default"), prometheus)


def test_without_our_exporter_there_is_no_exporter_policy(builds: dict[str, Build]) -> None:
    names = {
        o["metadata"]["name"] for o in builds["overlays/dcgm-exporter"].of_kind("NetworkPolicy")
    }
    assert names == {NAME}
