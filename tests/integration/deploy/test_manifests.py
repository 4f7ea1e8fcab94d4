"""Every kustomization builds with a real kubectl, and every object it yields is valid:
built-in kinds against Kubernetes' OpenAPI schemas, the PrometheusRule against its CRD
schema and `promtool check rules`, the monitors against what they must select."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from guardian.engine.dcgm_config import DCGM_TARGET, GUARDIAN_TARGET

from .conftest import KUSTOMIZATIONS, MANIFESTS, REPO, Build, Obj

# The oldest Kubernetes we support (Lease, policy/v1, autoscaling/v2 are all GA there)
# and the newest schema kubernetes-validate ships.
K8S_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
CRD_SCHEMAS = {
    "PrometheusRule": MANIFESTS / "schemas" / "monitoring.coreos.com_prometheusrules.yaml"
}
# No CRD schema is vendored for these; test_monitors_select_what_they_scrape checks them.
MONITORS = {"PodMonitor", "ServiceMonitor"}


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_builds_with_unique_objects(builds: dict[str, Build], name: str) -> None:
    objects = builds[name].objects
    ids = [
        (o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in objects
    ]
    assert len(ids) == len(set(ids))
    assert {o["kind"] for o in objects} >= {
        "Namespace",
        "Deployment",
        "ConfigMap",
        "PrometheusRule",
    }


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_builtin_objects_match_the_openapi_schema(
    builds: dict[str, Build], name: str, version: str
) -> None:
    checked = 0
    for obj in builds[name].objects:
        if obj["kind"] in CRD_SCHEMAS or obj["kind"] in MONITORS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = f"{name}: {obj['kind']} {obj['metadata']['name']} (k8s {version})"
            pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")
        checked += 1
    assert checked >= 10


def test_openapi_check_catches_a_misspelt_field() -> None:
    bad = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"ports": [{"port": 80, "targetPort": "http"}], "selectr": {}},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused (the API server would prune them
    silently, so a misspelt field would just vanish)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def crd_validator(kind: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load(CRD_SCHEMAS[kind].read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
    schema["properties"]["metadata"] = {"type": "object"}  # validated by the API machinery
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_prometheusrule_matches_its_crd_schema(builds: dict[str, Build], name: str) -> None:
    validator = crd_validator("PrometheusRule")
    rules = builds[name].of_kind("PrometheusRule")
    assert len(rules) == 1
    for obj in rules:
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(obj)]
        assert not errors, f"{name}: PrometheusRule {obj['metadata']['name']}: {errors}"
        groups = [g["name"] for g in obj["spec"]["groups"]]
        assert len(groups) == len(set(groups))


def test_crd_schema_check_catches_a_bad_rule() -> None:
    validator = crd_validator("PrometheusRule")
    bad = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "x"},
        "spec": {
            "groups": [
                {"name": "g", "rules": [{"alert": "A", "expr": "up", "for": "1.5m", "lables": {}}]}
            ]
        },
    }
    messages = " ".join(e.message for e in validator.iter_errors(bad))
    assert "does not match" in messages
    assert "'lables' was unexpected" in messages


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_promtool_accepts_the_rule_spec(
    builds: dict[str, Build], name: str, tmp_path: Path
) -> None:
    for obj in builds[name].of_kind("PrometheusRule"):
        path = tmp_path / f"{obj['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(obj["spec"], sort_keys=False), encoding="utf-8")
        result = subprocess.run(
            ["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout


def _selects(selector: Obj, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def _pod_template(build: Build, kind: str, name: str) -> Obj:
    template: Obj = build.one(kind, name)["spec"]["template"]
    return template


def test_monitors_select_what_they_scrape(builds: dict[str, Build]) -> None:
    base = builds["base"]
    pm = base.one("PodMonitor", "gpu-guardian-exporter-gpu-group")
    template = _pod_template(base, "DaemonSet", "gpu-guardian-exporter")
    assert _selects(pm["spec"]["selector"], template["metadata"]["labels"])
    assert pm["spec"]["namespaceSelector"]["matchNames"] == [pm["metadata"]["namespace"]]
    ports = {p["name"] for p in template["spec"]["containers"][0]["ports"]}
    assert {e["port"] for e in pm["spec"]["podMetricsEndpoints"]} <= ports
    # `guardian dcgm-config` generates scrape configs for our exporter with these.
    assert GUARDIAN_TARGET.pod_port in ports
    assert _selects(
        {"matchLabels": dict(GUARDIAN_TARGET.pod_labels)}, template["metadata"]["labels"]
    )
    assert GUARDIAN_TARGET.namespace == pm["metadata"]["namespace"]
    service = base.one("Service", "gpu-guardian-exporter")
    assert _selects(
        {"matchLabels": dict(GUARDIAN_TARGET.pod_labels)}, service["metadata"]["labels"]
    )
    assert GUARDIAN_TARGET.service_port in {p["name"] for p in service["spec"]["ports"]}

    sm = base.one("ServiceMonitor", "gpu-guardian-controller")
    svc = base.one("Service", "gpu-guardian-controller")
    assert _selects(sm["spec"]["selector"], svc["metadata"]["labels"])
    assert {e["port"] for e in sm["spec"]["endpoints"]} <= {p["name"] for p in svc["spec"]["ports"]}
    controller = _pod_template(base, "Deployment", "gpu-guardian-controller")
    assert _selects({"matchLabels": svc["spec"]["selector"]}, controller["metadata"]["labels"])

    dcgm = builds["overlays/dcgm-exporter"].one("PodMonitor", "dcgm-exporter-gpu-group")
    assert dcgm["metadata"]["namespace"] == DCGM_TARGET.namespace
    assert dcgm["spec"]["selector"]["matchLabels"] == dict(DCGM_TARGET.pod_labels)


def test_dcgm_overlay_replaces_our_exporter_and_rules(builds: dict[str, Build]) -> None:
    dcgm = builds["overlays/dcgm-exporter"]
    names = {(o["kind"], o["metadata"]["name"]) for o in dcgm.objects}
    assert not {n for n in names if "gpu-guardian-exporter" in n[1]}
    assert not dcgm.of_kind("DaemonSet")
    rule_text = yaml.safe_dump(dcgm.one("PrometheusRule", "gpu-guardian-dcgm-rules"))
    assert "DCGM_FI_DEV_FB_USED" in rule_text
    assert "guardian_gpu_utilization_ratio" not in rule_text
    rules_cm = dcgm.configmap("gpu-guardian-rules")
    assert "DCGM_FI_DEV_FB_USED" in "".join(rules_cm["data"].values())
    # Replaced, not merged: exactly the dcgm pack's files (the guardian pack has files the
    # dcgm pack has no counterpart for, sharing.yaml and unallocated.yaml), and none of
    # them reads GPU Guardian's exporter.
    dcgm_pack = {p.name for p in (REPO / "rules" / "dcgm").glob("*.yaml")}
    assert set(rules_cm["data"]) == dcgm_pack
    assert not re.search(r"guardian_(gpu|pod)_", "".join(rules_cm["data"].values()))
    base_rules = builds["base"].configmap("gpu-guardian-rules")
    assert set(base_rules["data"]) == {p.name for p in (REPO / "rules" / "guardian").glob("*.yaml")}
    assert set(base_rules["data"]) > dcgm_pack
    # The dcgm-exporter dashboard replaces ours in the same ConfigMap.
    (dashboard,) = dcgm.configmap("gpu-guardian-dashboard")["data"]
    assert dashboard == "gpu-guardian-dcgm.json"


def test_enforce_overlay_changes_only_what_enforcing_needs(builds: dict[str, Build]) -> None:
    base, enforce = builds["base"], builds["overlays/enforce"]

    def strip(objs: list[Obj]) -> dict[tuple[str, str], Obj]:
        out = {}
        for o in objs:
            name = o["metadata"]["name"]
            if o["kind"] == "ConfigMap":
                name = re.sub(r"-[a-z0-9]{10}$", "", name)  # a name suffix hash, if any
            out[(o["kind"], name)] = o
        return out

    b, e = strip(base.objects), strip(enforce.objects)
    assert set(b) == set(e)
    changed = sorted(k for k in b if yaml.safe_dump(b[k]) != yaml.safe_dump(e[k]))
    # The policies, and the controller, which turns dry-run off.
    assert changed == [
        ("ConfigMap", "gpu-guardian-policies"),
        ("Deployment", "gpu-guardian-controller"),
    ]


def test_config_maps_keep_their_names_so_an_edit_reloads_instead_of_rolling(
    builds: dict[str, Build],
) -> None:
    for build in builds.values():
        names = {o["metadata"]["name"] for o in build.of_kind("ConfigMap")}
        assert {"gpu-guardian-config", "gpu-guardian-rules", "gpu-guardian-policies"} <= names
        volumes = build.one("Deployment", "gpu-guardian-controller")["spec"]["template"]["spec"]
        mounted = {v["configMap"]["name"] for v in volumes["volumes"] if "configMap" in v}
        assert mounted <= names, build.name
        # subPath mounts never see an update; the reload needs whole-volume mounts.
        (controller,) = volumes["containers"]
        assert not [m for m in controller["volumeMounts"] if "subPath" in m], build.name
