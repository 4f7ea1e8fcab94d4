"""The fake API serves CRDs: schema validation, defaults, CEL rules, status, Tables, watch;
and rejects what a real server rejects where our code could depend on it (issue 14)."""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from kubernetes import client, watch

from guardian.model.policies_crd import (
    RULE_LABEL_KEYS,
    RULE_NO_ADVICE,
    RULE_RIGHT_SIZE,
    RULE_SELECTOR_VALUES,
    RULE_WARN_FIRST,
    crds,
)
from testbed.kubeapi import FakeKubeAPI, builders
from testbed.kubeapi.api_rules import MAX_REQUEST_BODY_BYTES
from testbed.kubeapi.cel import compile_rule
from tests.unit.guardian.model.test_policy_limits import AT_THE_LIMITS, OVER

GROUP, VERSION = "gpu-guardian.io", "v1alpha1"


def policy(name: str = "fleet", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterReclaimPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture
def custom(kube_api: FakeKubeAPI, kube_client: Any) -> client.CustomObjectsApi:
    for crd in crds():
        kube_api.create(crd)
    return client.CustomObjectsApi(kube_client)


def create(custom: client.CustomObjectsApi, body: dict[str, Any], **kw: Any) -> Any:
    return custom.create_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies", body, **kw)


def raw(
    api: FakeKubeAPI,
    method: str,
    path: str,
    body: object = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request with urllib: any header, any body."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback URL of the fake server
        f"{api.url}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def error_of(call: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(client.ApiException) as info:
        call()
    return info.value.status, json.loads(info.value.body)


def test_created_objects_are_defaulted(custom: client.CustomObjectsApi) -> None:
    made = create(custom, policy(ladder={"gracePeriod": "10m"}))
    spec = made["spec"]
    assert spec["mode"] == "observe"
    assert spec["ladder"] == {
        "gracePeriod": "10m",
        "notify": True,
        "annotate": True,
        "reclaim": True,
        "reproveAfterOutage": "0s",
    }
    assert spec["alerts"]["matchLabels"] == {"guardian_class": "reclaimable"}
    assert spec["delegation"] == "none"
    assert spec["partial"] == "notify"
    assert made["metadata"]["generation"] == 1


def test_schema_errors_name_each_field(custom: client.CustomObjectsApi) -> None:
    bad = policy(
        mode="sometimes",
        priority="high",
        ladder={"gracePeriod": "1x", "notify": False},
        limits={"perCycle": -1},
        scope={"workloadSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        activeWindows=["Mon-Fri 7:00-20:00 UTC"],
    )
    status, body = error_of(lambda: create(custom, bad))
    assert status == 422
    assert body["reason"] == "Invalid"
    fields = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert (
        fields["spec.mode"]
        == 'Unsupported value: "sometimes": supported values: "observe", "enforce"'
    )
    assert fields["spec.priority"].startswith(
        'Invalid value: "string": spec.priority in body must be of type integer'
    )
    assert "spec.ladder.gracePeriod" in fields
    assert "greater than or equal to 0" in fields["spec.limits.perCycle"]
    assert "In and NotIn need values" in fields["spec.scope.workloadSelector.matchExpressions[0]"]
    assert "spec.activeWindows[0]" in fields


def test_the_cel_rule_runs_once_the_schema_passes(custom: client.CustomObjectsApi) -> None:
    status, body = error_of(lambda: create(custom, policy(ladder={"notify": False})))
    assert status == 422
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.ladder"
    assert (
        cause["message"]
        == 'Invalid value: "object": reclaim needs notify: true (we always warn before acting)'
    )
    assert create(custom, policy(ladder={"notify": False, "reclaim": False}))


@pytest.mark.parametrize(
    "alerts",
    [
        {"names": ["GpuIdle", "GpuMemoryUnderutilized"]},
        {"matchLabels": {"guardian_class": "rightsize"}},
    ],
)
def test_a_policy_asking_for_memory_advice_is_refused_by_the_api(
    custom: client.CustomObjectsApi, alerts: dict[str, Any]
) -> None:
    status, body = error_of(lambda: create(custom, policy(alerts=alerts)))
    assert status == 422
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.alerts"
    assert "GpuMemoryUnderutilized is right-sizing advice" in cause["message"]


def test_unknown_fields_are_pruned_or_strict(custom: client.CustomObjectsApi) -> None:
    made = create(custom, policy("a", bogus=1))
    assert "bogus" not in made["spec"]
    status, body = error_of(lambda: create(custom, policy("b", bogus=1), field_validation="Strict"))
    assert status == 400
    assert body["message"] == 'strict decoding error: unknown field "spec.bogus"'


def test_a_team_policy_has_no_delegation_field(custom: client.CustomObjectsApi) -> None:
    body = {**policy("team", delegation="allow"), "kind": "ReclaimPolicy"}
    body["metadata"]["namespace"] = "default"
    status, _ = error_of(
        lambda: custom.create_namespaced_custom_object(
            GROUP, VERSION, "default", "reclaimpolicies", body, field_validation="Strict"
        )
    )
    assert status == 400


def test_status_subresource_and_generation(custom: client.CustomObjectsApi) -> None:
    create(custom, policy())
    patched = custom.patch_cluster_custom_object_status(
        GROUP,
        VERSION,
        "clusterreclaimpolicies",
        "fleet",
        {"status": {"observedGeneration": 1, "matchedWorkloads": 2}},
    )
    assert patched["status"]["matchedWorkloads"] == 2
    assert patched["metadata"]["generation"] == 1
    changed = custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterreclaimpolicies",
        "fleet",
        {"spec": {"mode": "enforce"}, "status": {"matchedWorkloads": 9}},
    )
    assert changed["metadata"]["generation"] == 2
    assert changed["status"]["matchedWorkloads"] == 2  # the main resource keeps status
    status, invalid = error_of(
        lambda: custom.patch_cluster_custom_object_status(
            GROUP,
            VERSION,
            "clusterreclaimpolicies",
            "fleet",
            {"status": {"matchedWorkloads": "two"}},
        )
    )
    assert status == 422
    assert invalid["details"]["causes"][0]["field"] == "status.matchedWorkloads"


def test_watch_sees_custom_objects(custom: client.CustomObjectsApi) -> None:
    listed = custom.list_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies")
    create(custom, policy())
    events = watch.Watch().stream(
        custom.list_cluster_custom_object,
        GROUP,
        VERSION,
        "clusterreclaimpolicies",
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=1,
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "fleet")]


def test_table_with_printer_columns(kube_api: FakeKubeAPI, custom: client.CustomObjectsApi) -> None:
    create(custom, policy())
    custom.patch_cluster_custom_object_status(
        GROUP,
        VERSION,
        "clusterreclaimpolicies",
        "fleet",
        {"status": {"matchedWorkloads": 3, "conditions": [{"type": "Ready", "status": "True"}]}},
    )
    status, table = raw(
        kube_api,
        "GET",
        f"/apis/{GROUP}/{VERSION}/clusterreclaimpolicies",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
    )
    assert status == 200
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == [
        "Name",
        "Mode",
        "Matched",
        "Pending",
        "Reclaimed",
        "Last Action",
        "Ready",
        "Age",
    ]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["fleet", "observe", 3, None]
    assert row["cells"][6] == "True"
    assert row["object"]["kind"] == "PartialObjectMetadata"


# ---------------------------------------------------------------- the CEL mirrors


SAMPLES: list[tuple[str, dict[str, Any]]] = (
    [(RULE_WARN_FIRST, {"reclaim": r, "notify": n}) for r in (True, False) for n in (True, False)]
    + [(RULE_WARN_FIRST, ladder) for ladder in ({}, {"notify": False}, {"reclaim": False})]
    + [
        (
            RULE_SELECTOR_VALUES,
            {"key": "k", "operator": op, **({"values": v} if v is not None else {})},
        )
        for op in ("In", "NotIn", "Exists", "DoesNotExist")
        for v in (None, [], ["a"])
    ]
    + [
        (RULE_NO_ADVICE, alerts)
        for alerts in (
            {},
            {"names": []},
            {"names": ["GpuIdle"]},
            {"names": ["GpuIdle", "GpuMemoryUnderutilized"]},
            {"matchLabels": {}},
            {"matchLabels": {"guardian_class": "reclaimable"}},
            {"matchLabels": {"guardian_class": "rightsize"}},
            {"matchLabels": {"alertname": "GpuMemoryUnderutilized"}},
            {"names": ["GpuIdle"], "matchLabels": {"guardian_class": "violation"}},
        )
    ]
    + [
        (RULE_RIGHT_SIZE, spec)
        for spec in (
            {},
            {"partial": "notify"},
            {"partial": "rightSize"},
            {"partial": "rightSize", "ladder": {}},
            {"partial": "rightSize", "ladder": {"reclaim": True}},
            {"partial": "rightSize", "ladder": {"reclaim": False}},
            {"partial": "notify", "ladder": {"reclaim": False}},
        )
    ]
    + [
        (RULE_LABEL_KEYS, labels)
        for labels in (
            {},
            {"a": "1"},
            {"example.com/a-b": "x"},
            {"bad key": "x"},
            {"-a": "x"},
            {"a/b/c": ""},
        )
    ]
)


@pytest.mark.parametrize(("rule", "obj"), SAMPLES)
def test_python_mirror_agrees_with_the_cel_text(rule: str, obj: dict[str, Any]) -> None:
    env = celpy.Environment()
    program = env.program(env.compile(rule))
    expected = bool(program.evaluate({"self": celpy.json_to_cel(obj)}))
    mirror = compile_rule(rule)
    assert mirror is not None
    assert mirror(obj) is expected


def test_a_crd_with_an_unknown_rule_is_refused(kube_api: FakeKubeAPI) -> None:
    crd = crds()[0]
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [
        {"rule": "self.spec.mode != 'x'"}
    ]
    with pytest.raises(Exception, match="cannot evaluate these CEL rules"):
        kube_api.create(crd)


# ---------------------------------------------------------------- what our code relies on


def test_annotations_over_256_kib_are_invalid(core: client.CoreV1Api) -> None:
    big = {"a": "x" * (256 * 1024)}
    status, body = error_of(
        lambda: core.create_namespaced_config_map(
            "default", {"metadata": {"name": "big", "annotations": big}}
        )
    )
    assert status == 422
    causes = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert causes["metadata.annotations"] == "Too long: must have at most 262144 bytes"
    fits = {"a": "x" * (256 * 1024 - 1)}
    assert core.create_namespaced_config_map(
        "default", {"metadata": {"name": "ok", "annotations": fits}}
    )


def test_request_bodies_over_3_mib_are_refused(kube_api: FakeKubeAPI) -> None:
    body = {"metadata": {"name": "huge"}, "data": {"k": "x" * MAX_REQUEST_BODY_BYTES}}
    status, reply = raw(kube_api, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert status == 413
    assert reply["reason"] == "RequestEntityTooLarge"
    assert reply["message"] == "Request entity too large: limit is 3145728"


def test_a_deployment_selector_is_immutable(kube_api: FakeKubeAPI, apps: client.AppsV1Api) -> None:
    kube_api.create(builders.deployment("web", replicas=1))
    status, body = error_of(
        lambda: apps.patch_namespaced_deployment(
            "web",
            "default",
            {"spec": {"selector": {"matchLabels": {"app": "other"}}}},
            _content_type="application/merge-patch+json",
        )
    )
    assert status == 422
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.selector"
    assert cause["message"].endswith("field is immutable")


@pytest.mark.parametrize(
    ("spec", "code", "text"),
    [
        (
            {"leaseDurationSeconds": "15"},
            400,
            (
                "cannot unmarshal string into Go struct field "
                "LeaseSpec.spec.leaseDurationSeconds of type int32"
            ),
        ),
        ({"holderIdentity": 7}, 400, "of type string"),
        ({"renewTime": "yesterday"}, 400, 'parsing time "yesterday"'),
        ({"leaseDurationSeconds": 0}, 422, "must be greater than 0"),
        ({"leaseTransitions": -1}, 422, "must be greater than or equal to 0"),
    ],
)
def test_lease_fields_are_typed(
    kube_api: FakeKubeAPI, spec: dict[str, Any], code: int, text: str
) -> None:
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": spec,
    }
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    status, reply = raw(kube_api, "POST", path, body)
    assert status == code
    assert text in reply["message"]


def test_self_subject_access_review(kube_client: Any) -> None:
    api = client.AuthorizationV1Api(kube_client)
    review = api.create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}
    )
    assert review.status.allowed is True
    status, _ = error_of(lambda: api.create_self_subject_access_review({"spec": {}}))
    assert status == 422


def test_openapi_v3_declares_field_validation(
    kube_api: FakeKubeAPI, custom: client.CustomObjectsApi
) -> None:
    status, root = raw(kube_api, "GET", "/openapi/v3")
    assert status == 200
    url = root["paths"][f"apis/{GROUP}/{VERSION}"]["serverRelativeURL"]
    status, doc = raw(kube_api, "GET", url.split("?")[0])
    patch = doc["paths"][f"/apis/{GROUP}/{VERSION}/clusterreclaimpolicies/{{name}}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "ClusterReclaimPolicy"
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_the_examples_pass_the_schema(
    kube_api: FakeKubeAPI, custom: client.CustomObjectsApi
) -> None:
    kube_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    root = Path(__file__).resolve().parents[3] / "examples/policies/objects"
    for path in sorted(root.glob("*.yaml")):
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        ns = obj["metadata"].get("namespace")
        if ns is None:
            create(custom, obj, field_validation="Strict")
        else:
            custom.create_namespaced_custom_object(
                GROUP, VERSION, ns, "reclaimpolicies", obj, field_validation="Strict"
            )


def test_a_policy_at_every_limit_is_created(custom: client.CustomObjectsApi) -> None:
    create(custom, copy.deepcopy(AT_THE_LIMITS), field_validation="Strict")


@pytest.mark.parametrize(("spec", "field"), OVER, ids=[field for _, field in OVER])
def test_the_api_refuses_a_policy_over_a_limit(
    custom: client.CustomObjectsApi, spec: dict[str, Any], field: str
) -> None:
    """The same field the pydantic model names (tests/unit/guardian/model/)."""
    status, body = error_of(lambda: create(custom, policy(**spec)))
    assert status == 422
    causes = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert causes[field].startswith(("Too long: ", "Too many: ")), causes
