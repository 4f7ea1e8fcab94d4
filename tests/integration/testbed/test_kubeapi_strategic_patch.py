"""Strategic merge patch: each directive and merge key (literal before, patch, after),
the 415 a custom resource answers, and a second real ``kubectl apply``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guardian.model.policies_crd import crds
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi.errors import ApiError
from testbed.kubeapi.strategic_patch import MERGE_KEYS, strategic_merge_patch
from tests.integration.deploy.conftest import find_kubectl, require_tool

from .conftest import raw_request

pytestmark = pytest.mark.e2e

SMP = "application/strategic-merge-patch+json"
POD = "spec.template.spec"


def _pod(**spec: Any) -> dict[str, Any]:
    """A Deployment-shaped object with this pod spec."""
    return {"spec": {"template": {"spec": spec}}}


# (what, before, patch, after)
VECTORS: list[tuple[str, Any, Any, Any]] = [
    (
        "maps merge, null deletes, other values replace",
        {"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}, "spec": {"replicas": 1}},
        {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"replicas": [1]}},
        {"metadata": {"labels": {"b": "2", "c": "3"}, "name": "x"}, "spec": {"replicas": [1]}},
    ),
    (
        "containers merge by name; a new one is appended",
        _pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
        _pod(containers=[{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}]),
        _pod(
            containers=[
                {"name": "a", "image": "a:1"},
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"},
            ]
        ),
    ),
    (
        "initContainers and ephemeralContainers merge by name",
        {"spec": {"initContainers": [{"name": "i", "image": "1"}], "ephemeralContainers": []}},
        {"spec": {"initContainers": [{"name": "i", "args": ["x"]}]}},
        {
            "spec": {
                "initContainers": [{"name": "i", "image": "1", "args": ["x"]}],
                "ephemeralContainers": [],
            }
        },
    ),
    (
        "env merges by name; $patch: delete removes one",
        _pod(
            containers=[
                {"name": "m", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
            ]
        ),
        _pod(
            containers=[
                {
                    "name": "m",
                    "env": [
                        {"name": "A", "value": "9"},
                        {"name": "B", "$patch": "delete"},
                        {"name": "C", "value": "3"},
                    ],
                }
            ]
        ),
        _pod(
            containers=[
                {"name": "m", "env": [{"name": "A", "value": "9"}, {"name": "C", "value": "3"}]}
            ]
        ),
    ),
    (
        "a container's ports merge by containerPort",
        _pod(containers=[{"name": "m", "ports": [{"containerPort": 80, "name": "http"}]}]),
        _pod(
            containers=[
                {
                    "name": "m",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 9090}],
                }
            ]
        ),
        _pod(
            containers=[
                {
                    "name": "m",
                    "ports": [
                        {"containerPort": 80, "name": "http", "protocol": "TCP"},
                        {"containerPort": 9090},
                    ],
                }
            ]
        ),
    ),
    (
        "volumeMounts by mountPath, volumes and imagePullSecrets by name",
        _pod(
            containers=[{"name": "m", "volumeMounts": [{"mountPath": "/etc", "name": "a"}]}],
            volumes=[{"name": "a", "configMap": {"name": "a"}}],
            imagePullSecrets=[{"name": "reg"}],
        ),
        _pod(
            containers=[
                {
                    "name": "m",
                    "volumeMounts": [
                        {"mountPath": "/etc", "readOnly": True},
                        {"mountPath": "/data", "name": "b"},
                    ],
                }
            ],
            volumes=[{"name": "b", "emptyDir": {}}],
            imagePullSecrets=[{"name": "other"}],
        ),
        _pod(
            containers=[
                {
                    "name": "m",
                    "volumeMounts": [
                        {"mountPath": "/etc", "name": "a", "readOnly": True},
                        {"mountPath": "/data", "name": "b"},
                    ],
                }
            ],
            volumes=[{"name": "a", "configMap": {"name": "a"}}, {"name": "b", "emptyDir": {}}],
            imagePullSecrets=[{"name": "reg"}, {"name": "other"}],
        ),
    ),
    (
        "tolerations, args and command have no merge key: replaced",
        _pod(
            tolerations=[{"key": "a"}],
            containers=[{"name": "m", "args": ["1", "2"], "command": ["x"]}],
        ),
        _pod(
            tolerations=[{"key": "b"}], containers=[{"name": "m", "args": ["3"], "command": ["y"]}]
        ),
        _pod(
            tolerations=[{"key": "b"}], containers=[{"name": "m", "args": ["3"], "command": ["y"]}]
        ),
    ),
    (
        "a Service's ports merge by port",
        {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}},
    ),
    (
        "$patch: replace in a map",
        {"metadata": {"labels": {"a": "1", "b": "2"}}},
        {"metadata": {"labels": {"$patch": "replace", "c": "3"}}},
        {"metadata": {"labels": {"c": "3"}}},
    ),
    (
        "$patch: replace in a list of objects",
        _pod(containers=[{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]),
        _pod(containers=[{"$patch": "replace"}, {"name": "c", "image": "c"}]),
        _pod(containers=[{"name": "c", "image": "c"}]),
    ),
    (
        "$patch: delete in a map empties it",
        {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
        {"spec": {"strategy": {"$patch": "delete"}}},
        {"spec": {"strategy": {}}},
    ),
    (
        "$setElementOrder: named items in its order, server-only ones where they were",
        _pod(containers=[{"name": "a"}, {"name": "server"}, {"name": "b"}]),
        _pod(
            **{
                "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}, {"name": "b"}],
                "containers": [{"name": "c", "image": "c"}],
            }
        ),
        # upstream's mergeSortedSlice: a server-only item goes before a named one unless
        # both were on the server and the named one came first
        _pod(
            containers=[
                {"name": "a"},
                {"name": "server"},
                {"name": "c", "image": "c"},
                {"name": "b"},
            ]
        ),
    ),
    (
        "$setElementOrder of a list of primitives",
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["c"]}},
        {"metadata": {"finalizers": ["b", "c", "a"]}},
    ),
    (
        "$retainKeys clears the keys it does not name",
        {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        {"spec": {"strategy": {"type": "Recreate"}}},
    ),
    (
        "$deleteFromPrimitiveList; a primitive merge list is a set union",
        {"metadata": {"finalizers": ["a", "b", "c"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["c", "d"]}},
        {"metadata": {"finalizers": ["a", "c", "d"]}},
    ),
    (
        "a list the original lacks is the patch's, directives removed",
        {"spec": {}},
        _pod(containers=[{"name": "a", "image": "a", "env": [{"name": "X", "$patch": "delete"}]}]),
        _pod(containers=[{"name": "a", "image": "a", "env": []}]),
    ),
]


@pytest.mark.parametrize(
    ("before", "patch", "after"), [v[1:] for v in VECTORS], ids=[v[0] for v in VECTORS]
)
def test_strategic_merge_patch(before: Any, patch: Any, after: Any) -> None:
    frozen = (json.dumps(before), json.dumps(patch))
    assert strategic_merge_patch(before, patch) == after
    assert (json.dumps(before), json.dumps(patch)) == frozen  # neither argument changed


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            _pod(containers=[{"$patch": "merge"}]),
            "merging lists cannot yet be specified in the patch",
        ),
        ({"metadata": {"$patch": "merge"}}, "unknown patch type: merge"),
        (_pod(containers=[{"image": "x"}]), "does not contain declared merge key: name"),
        (
            _pod(containers=[{"name": "m", "env": [{"$patch": "delete"}]}]),
            "declared merge key: name",
        ),
        ({"metadata": {"$retainKeys": "name"}}, "$retainKeys must be a list"),
    ],
)
def test_a_malformed_patch_is_400(patch: Any, message: str) -> None:
    with pytest.raises(ApiError) as caught:
        strategic_merge_patch(_pod(containers=[{"name": "m"}]), patch)
    assert caught.value.code == 400
    assert message in caught.value.message


def test_the_merge_key_table_covers_every_pod_spec() -> None:
    for spec in ("spec", POD, "template.spec", "spec.jobTemplate.spec.template.spec"):
        assert MERGE_KEYS[f"{spec}.containers"] == "name"
        assert MERGE_KEYS[f"{spec}.containers.ports"] == "containerPort"
        assert MERGE_KEYS[f"{spec}.initContainers.volumeMounts"] == "mountPath"
    assert f"{POD}.tolerations" not in MERGE_KEYS
    assert f"{POD}.containers.args" not in MERGE_KEYS


def test_built_ins_take_it_over_the_wire_and_custom_resources_answer_415(
    kube_api: FakeKubeAPI,
) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
    }
    kube_api.create({**cm, "data": {"a": "1", "b": "2"}})
    code, body = raw_request(
        kube_api,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c",
        {"data": {"a": None, "c": "3"}},
        content_type=SMP,
    )
    assert (code, body["data"]) == (200, {"b": "2", "c": "3"})

    for crd in crds():
        kube_api.create(crd)
    policy = {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ClusterReclaimPolicy",
        "metadata": {"name": "p"},
        "spec": {},
    }
    kube_api.create(policy)
    code, body = raw_request(
        kube_api,
        "PATCH",
        "/apis/gpu-guardian.io/v1alpha1/clusterreclaimpolicies/p",
        {"metadata": {"labels": {"a": "b"}}},
        content_type=SMP,
    )
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")
    # k8s.io/apiserver's NewUnsupportedMediaTypeError, naming what the fake accepts.
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/merge-patch+json"
    )
    assert "labels" not in kube_api.get("ClusterReclaimPolicy", "p")["metadata"]


FIRST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: registry.example/web:1.0
        env: [{name: KEEP, value: "1"}, {name: GONE, value: "2"}]
        ports: [{containerPort: 8080, name: http}]
      - name: sidecar
        image: registry.example/sidecar:1.0
"""
SECOND = (
    FIRST.replace("web:1.0", "web:2.0")
    .replace('{name: GONE, value: "2"}', '{name: NEW, value: "3"}')
    .replace("{containerPort: 8080, name: http}", "{containerPort: 9090, name: http}")
)


def test_kubectl_apply_twice_ends_as_the_second_manifest_says(
    kube_api: FakeKubeAPI, kubeconfig: Path, tmp_path: Path
) -> None:
    kubectl = require_tool(*find_kubectl())
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}
    manifest = tmp_path / "web.yaml"
    for text, said in ((FIRST, "created"), (SECOND, "configured")):
        manifest.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [kubectl, "--request-timeout=20s", "apply", "-f", str(manifest)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert f"deployment.apps/web {said}" in done.stdout

    (patch,) = kube_api.requests(verb="patch")
    assert patch.content_type == SMP
    web = kube_api.get("Deployment", "web")
    main, sidecar = web["spec"]["template"]["spec"]["containers"]
    assert main["image"] == "registry.example/web:2.0"
    assert main["env"] == [{"name": "KEEP", "value": "1"}, {"name": "NEW", "value": "3"}]
    assert main["ports"] == [{"containerPort": 9090, "name": "http"}]
    assert sidecar == {"name": "sidecar", "image": "registry.example/sidecar:1.0"}
    applied = json.loads(
        web["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert (
        applied["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/web:2.0"
    )
    assert [e["name"] for e in applied["spec"]["template"]["spec"]["containers"][0]["env"]] == [
        "KEEP",
        "NEW",
    ]
