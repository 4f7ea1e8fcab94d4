"""docs/deploy.md's Install and Uninstall, run as written: every `sh` block of the two
sections, in order (and between them the Upgrade's `sed` and second `kubectl apply -k`,
its image neither built nor pushed), in bash, with a real kubectl against the test bed's
API server (serving every kind of the manifests, with the prometheus-operator's CRDs that
kube-prometheus-stack would have installed) and the `guardian` command line of this checkout.

What a cluster does between the commands, the test does: after `kubectl apply -k` it
starts the controller's pod as the API holds it (pods.py: the Deployment's args and env,
its ConfigMaps laid out as volumes); when the Deployment is scaled to 0 it stops it. Blocks
marked `<!-- e2e: skip (why) -->` need a registry, a kubelet or pods, and are not run.
Before the uninstall, workloads are reclaimed by today's executor, as an enforcing
controller would have; after it, none stays down and no annotation of ours is left.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config

from guardian.model.policies import PREFIX
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi.errors import ApiError
from tests.integration.deploy.conftest import find_kubectl, require_tool
from tests.integration.remediation.scenario import fleet_metrics

from .cluster import start_cluster
from .pods import NS, ControllerPod
from .reclaimed import NS as WORKLOADS
from .reclaimed import Before, our_annotations, reclaim_fleet

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs" / "deploy.md"
_FENCE = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
_SKIP = re.compile(r"<!-- e2e: skip \(([^)]*)\) -->\s*$")


@dataclass(frozen=True)
class Block:
    section: str
    text: str
    skip: str | None  # why the test does not run it


def blocks(section: str) -> list[Block]:
    """The `sh` blocks of one `## section` of docs/deploy.md, in order."""
    docs = DOCS.read_text(encoding="utf-8")
    start = docs.index(f"\n## {section}\n")
    end = docs.find("\n## ", start + 1)
    body = docs[start : end if end > 0 else len(docs)]
    found = []
    for match in _FENCE.finditer(body):
        before = body[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        found.append(Block(section, match.group(1), skip.group(1) if skip else None))
    return found


@pytest.fixture
def cluster() -> Iterator[FakeKubeAPI]:
    api = start_cluster()
    try:
        yield api
    finally:
        api.stop()


@dataclass
class Shell:
    """Runs the documented blocks where an admin would: a checkout, a kubeconfig."""

    workdir: Path
    env: dict[str, str]
    pod: ControllerPod | None = None  # a block waiting on a pod that died fails at once

    def run(self, block: Block) -> str:
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 240
        while proc.poll() is None:
            died = self.pod.failed() if self.pod is not None else None
            if died is not None or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                pytest.fail(f"{block.text}\n{died or 'timed out'}")
            time.sleep(0.2)
        out, err = proc.communicate()
        assert proc.returncode == 0, f"{block.section}: {block.text}\n{out}\n{err}"
        return out


def _shell(cluster: FakeKubeAPI, tmp: Path, kubectl: str) -> Shell:
    checkout = tmp / "checkout"
    shutil.copytree(REPO / "manifests", checkout / "manifests")
    guardian = REPO / ".venv" / "bin"
    path = os.pathsep.join([str(Path(kubectl).parent), str(guardian), "/usr/bin", "/bin"])
    kubeconfig = cluster.write_kubeconfig(tmp / "admin.kubeconfig")
    env = {"PATH": path, "HOME": str(tmp / "home"), "KUBECONFIG": str(kubeconfig)}
    (tmp / "home").mkdir()
    return Shell(checkout, env)


def _run_section(
    shell: Shell, section: str, after: dict[str, Callable[[], None]]
) -> list[tuple[Block, str]]:
    ran = []
    for block in blocks(section):
        if block.skip is not None:
            continue
        ran.append((block, shell.run(block)))
        for needle, hook in after.items():
            if needle in block.text:
                hook()
    return ran


def _settings(shell: Shell) -> dict[str, str]:
    path = shell.workdir / "manifests" / "my-cluster" / "settings.yaml"
    data: dict[str, str] = yaml.safe_load(path.read_text(encoding="utf-8"))["data"]
    return data


def test_install_then_uninstall_as_documented(
    cluster: FakeKubeAPI, prometheus: Any, tmp_path: Path
) -> None:
    kubectl = require_tool(*find_kubectl())
    prom = prometheus(openmetrics=fleet_metrics())
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-research"}})
    shell = _shell(cluster, tmp_path, kubectl)
    sa = cluster.write_kubeconfig(tmp_path / "serviceaccount.kubeconfig")
    configured = "http://prometheus-operated.monitoring.svc:9090"
    pod = ControllerPod(cluster, tmp_path / "pod", sa, (configured, prom.url))
    (tmp_path / "pod").mkdir()
    shell.pod = pod
    try:
        installed = _run_section(shell, "Install", {"kubectl apply -k": pod.start})
        _check_installed(cluster, shell, installed, pod)
        _upgraded_as_documented(cluster, shell)
        _reclaimed_by_an_enforcing_controller(cluster, tmp_path)
        uninstalled = _run_section(shell, "Uninstall", {"--replicas=0": pod.stop})
        _check_uninstalled(cluster, uninstalled)
    finally:
        pod.stop()


def _check_installed(
    cluster: FakeKubeAPI, shell: Shell, ran: list[tuple[Block, str]], pod: ControllerPod
) -> None:
    assert pod.proc is not None, "no block applied the install"
    assert pod.proc.poll() is None, pod.output()[-3000:]
    check = next(out for block, out in ran if "kubectl wait" in block.text)
    assert "clusterreclaimpolicy.gpu-guardian.io/install-check condition met" in check
    assert re.search(r"^install-check\s+observe\s+0\s+0\s+0\s+\S*\s*True", check, re.M), check
    holder = check.strip().splitlines()[-2]  # the Lease's holder, before the delete's line
    assert holder == cluster.get("Lease", "gpu-guardian", NS)["spec"]["holderIdentity"] != ""
    # The values of settings.yaml, in the objects the API holds.
    settings = _settings(shell)
    deployment = cluster.get("Deployment", "gpu-guardian-controller", NS)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == settings["image"]
    rule = cluster.get("PrometheusRule", "gpu-guardian-rules", NS)
    assert rule["metadata"]["labels"]["release"] == settings["prometheusRelease"]
    labels = cluster.get("Namespace", "ml-research")["metadata"]["labels"]
    assert labels[PREFIX + "reclaim"] == "true"
    with pytest.raises(ApiError):
        cluster.get("ClusterReclaimPolicy", "install-check")  # the check deleted itself


def _applied(cluster: FakeKubeAPI) -> dict[str, Any]:
    """What the Upgrade may change: the workloads' specs and the applied ConfigMaps' names."""
    last = "kubectl.kubernetes.io/last-applied-configuration"
    configmaps = [
        o["metadata"]["name"]
        for o in cluster.objects("ConfigMap")
        if o["metadata"].get("namespace") == NS and last in (o["metadata"].get("annotations") or {})
    ]
    return {
        "controller": cluster.get("Deployment", "gpu-guardian-controller", NS)["spec"],
        "exporter": cluster.get("DaemonSet", "gpu-guardian-exporter", NS)["spec"],
        "configmaps": sorted(configmaps),
    }


def _images(spec: dict[str, Any]) -> list[str]:
    return [c["image"] for c in spec["template"]["spec"]["containers"]]


def _upgraded_as_documented(cluster: FakeKubeAPI, shell: Shell) -> None:
    """The Upgrade's block, less building and pushing the image: its `sed` and its second
    `kubectl apply -k`, a strategic merge patch of each built-in object."""
    (block,) = blocks("Upgrade")
    lines = [line for line in block.text.splitlines() if line.startswith(("sed ", "kubectl "))]
    assert [line.split()[0] for line in lines] == ["sed", "kubectl"], block.text
    before = _applied(cluster)
    old = _settings(shell)["image"]
    cluster.clear_requests()
    shell.run(Block("Upgrade", "\n".join(lines), None))
    new = _settings(shell)["image"]
    assert new != old
    after = _applied(cluster)
    assert _images(after["controller"]) == [new] * len(_images(before["controller"]))
    assert _images(after["exporter"]) == [new] * len(_images(before["exporter"]))
    for spec in (after["controller"], after["exporter"]):
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = old
    assert after == before  # nothing but the image changed; the ConfigMaps kept their names
    patched = {r.content_type for r in cluster.requests(verb="patch")}
    assert patched == {"application/strategic-merge-patch+json"}, patched


def _reclaimed_by_an_enforcing_controller(cluster: FakeKubeAPI, tmp_path: Path) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "executor.kubeconfig")
    client = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        reclaim_fleet(cluster, client)
    finally:
        client.close()
    assert cluster.get("Deployment", "train", WORKLOADS)["spec"]["replicas"] == 0


def _check_uninstalled(cluster: FakeKubeAPI, ran: list[tuple[Block, str]]) -> None:
    dry_run = ran[0][1].splitlines()
    assert len(dry_run) == 4, dry_run  # one line per reclaimed workload, nothing changed
    assert all("would " in line for line in dry_run)
    assert ran[-1][1] == "", "the last dry run still finds annotations of ours"
    before = Before()
    assert (
        cluster.get("Deployment", "train", WORKLOADS)["spec"]["replicas"] == before.train_replicas
    )
    assert (
        cluster.get("StatefulSet", "serve", WORKLOADS)["spec"]["replicas"] == before.serve_replicas
    )
    assert cluster.get("CronJob", "nightly", WORKLOADS)["spec"]["suspend"] is False
    assert our_annotations(cluster) == {}
    assert PREFIX + "reclaim" not in (
        cluster.get("Namespace", "ml-research")["metadata"].get("labels") or {}
    )
    for kind, name, namespace in (
        ("Deployment", "gpu-guardian-controller", NS),
        ("DaemonSet", "gpu-guardian-exporter", NS),
        ("ClusterRole", "gpu-guardian-controller", None),
        ("CustomResourceDefinition", "clusterreclaimpolicies.gpu-guardian.io", None),
        ("Namespace", NS, None),
    ):
        with pytest.raises(ApiError):
            cluster.get(kind, name, namespace)
