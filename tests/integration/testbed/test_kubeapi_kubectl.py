"""kubectl against the fake server: proof that it speaks the real protocol (optional)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.kubeapi import FakeKubeAPI, builders

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


def _kubectl(kubeconfig: Path, home: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run(
        ["kubectl", "--request-timeout=20s", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_get_scale_annotate(
    kube_api: FakeKubeAPI, kubeconfig: Path, tmp_path: Path
) -> None:
    kube_api.create(builders.deployment("web", replicas=2))
    kube_api.create(builders.pod("web-1", node="n1"))
    kube_api.create(builders.notebook("nb"))

    assert _kubectl(kubeconfig, tmp_path, "get", "pods", "-o", "name").split() == ["pod/web-1"]
    listed = json.loads(_kubectl(kubeconfig, tmp_path, "get", "deploy", "-o", "json"))
    assert [item["metadata"]["name"] for item in listed["items"]] == ["web"]
    assert "deployment.apps/web scaled" in _kubectl(
        kubeconfig, tmp_path, "scale", "deployment/web", "--replicas=0"
    )
    _kubectl(kubeconfig, tmp_path, "annotate", "deployment", "web", "gpu-guardian.io/reason=idle")
    _kubectl(kubeconfig, tmp_path, "annotate", "notebook", "nb", "kubeflow-resource-stopped=now")
    # What docs/deploy.md and docs/policies.md tell a person to run.
    _kubectl(kubeconfig, tmp_path, "label", "namespace", "default", "gpu-guardian.io/reclaim=true")
    _kubectl(
        kubeconfig, tmp_path, "annotate", "namespace", "default", "gpu-guardian.io/kill-switch=true"
    )

    web = kube_api.get("Deployment", "web")
    assert web["spec"]["replicas"] == 0
    assert web["metadata"]["annotations"] == {"gpu-guardian.io/reason": "idle"}
    assert kube_api.get("Notebook", "nb")["metadata"]["annotations"] == {
        "kubeflow-resource-stopped": "now"
    }
    (scale,) = kube_api.requests(verb="patch", path=r"/scale$")
    assert scale.content_type == "application/merge-patch+json"
    default = kube_api.get("Namespace", "default")["metadata"]
    assert default["labels"]["gpu-guardian.io/reclaim"] == "true"
    assert default["annotations"] == {"gpu-guardian.io/kill-switch": "true"}
    managers = {r.field_manager for r in kube_api.requests(verb="patch")}
    assert "kubectl-annotate" in managers
    # kubectl sends merge patches only: the one type the fake implements.
    assert {r.content_type for r in kube_api.requests(verb="patch")} == {
        "application/merge-patch+json"
    }


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: applied, namespace: default}
spec:
  selector: {matchLabels: {app: applied}}
  template:
    metadata: {labels: {app: applied}}
    spec: {containers: [{name: main, image: busybox}]}
"""


def test_kubectl_apply_validates_without_turning_validation_off(
    kube_api: FakeKubeAPI, kubeconfig: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(DEPLOYMENT, encoding="utf-8")
    out = _kubectl(kubeconfig, tmp_path, "apply", "-f", str(manifest))
    assert "deployment.apps/applied created" in out
    (create,) = kube_api.requests(verb="create", path=r"/deployments$")
    assert create.query.get("fieldValidation") == "Strict"  # the server validates
    assert _kubectl(kubeconfig, tmp_path, "auth", "can-i", "patch", "deployments").strip() == "yes"
