"""Issue 16's "done when": reclaim policies as Kubernetes objects, driven by a real kubectl.

kubectl applies the CRDs and a ClusterReclaimPolicy in observe to the fake API; the
controller (build_remediation, its informers, the planner, the executor, the status
writer) lists the idle workload as a would-reclaim candidate; ``kubectl get`` shows the
printer columns; ``kubectl patch`` switches to enforce and the ladder runs without a
restart; a team's ReclaimPolicy that shortens the grace period is rejected in its status
and has no effect; an invalid edit keeps the previous generation in force.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    RemediationParts,
    build_remediation,
)
from guardian.app.settings.remediation import RemediationSettings
from guardian.model.labels import LabelSet
from guardian.model.reclaim import FiringAlert
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

ROOT = Path(__file__).resolve().parents[3]
CRDS = ROOT / "manifests/base/crds/reclaimpolicies.yaml"
T0 = 1_700_000_000.0  # a day after the fake cluster's objects were created
GROUP = "gpu-guardian.io/v1alpha1"

FLEET = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ClusterReclaimPolicy
metadata:
  name: fleet
spec:
  mode: observe
  delegation: allow
  alerts: {names: [GpuIdle]}
  ladder: {gracePeriod: 10m}
  warmup: 10m
"""

# A team's policy that tries to reclaim after 1 minute, under the cluster's 10.
HASTY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata:
  name: hasty
  namespace: ml
spec:
  mode: enforce
  alerts: {names: [GpuIdle]}
  ladder: {gracePeriod: 1m}
  warmup: 10m
"""


class Kubectl:
    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": str(kubeconfig),
        }

    def run(self, *args: str, stdin: str | None = None, ok: bool = True) -> str:
        done = subprocess.run(
            ["kubectl", "--request-timeout=20s", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (done.returncode == 0) is ok, done.stderr
        return done.stdout if ok else done.stderr

    def apply(self, text: str) -> str:
        return self.run("apply", "-f", "-", stdin=text)

    def json(self, *args: str) -> Any:
        return json.loads(self.run("get", *args, "-o", "json"))


def idle_alert() -> FiringAlert:
    labels = {
        "alertname": "GpuIdle",
        "guardian_class": "reclaimable",
        "namespace": "ml",
        "pod": "train-abc-1",
        "node": "n1",
    }
    return FiringAlert(LabelSet(labels), T0 - 3600, True)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def parts(kube: FakeKubeAPI, tmp_path: Path) -> Iterator[RemediationParts]:
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-abc", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-abc-1", "ml", node="n1", owners=[b.owner_reference(rs)]))
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    built = build_remediation(
        RemediationSettings.model_validate(
            {
                "enabled": True,
                "dry_run": False,
                "kubeconfig": str(kubeconfig),
                "cycle_interval": "1s",
                "leader_election": {"enabled": False},
            }
        ),
        Database.open(tmp_path / "state.db"),
        EngineSide(lambda: [idle_alert()]),
        ClusterAccess(config.new_client_from_config(config_file=str(kubeconfig))),
    )
    try:
        yield built
    finally:
        built.close()


def generation_seen(parts: RemediationParts, kind: str, name: str, generation: int) -> bool:
    objects = parts.loop.policy_objects
    assert objects is not None
    for informer in objects.informers:
        for obj in informer.snapshot().objects.values():
            meta = obj["metadata"]
            if obj["kind"] == kind and meta["name"] == name:
                return int(meta["generation"]) >= generation
    return False


@pytest.mark.timeout(120)
def test_policy_objects_with_kubectl(
    kube: FakeKubeAPI, parts: RemediationParts, tmp_path: Path
) -> None:
    kubectl = Kubectl(kube.write_kubeconfig(tmp_path / "kc-admin"), tmp_path)
    assert "clusterreclaimpolicies.gpu-guardian.io created" in kubectl.run("apply", "-f", str(CRDS))
    kubectl.apply(FLEET)
    loop = parts.loop
    wait_for(
        "the cluster policy", lambda: generation_seen(parts, "ClusterReclaimPolicy", "fleet", 1)
    )

    # Observe: within two cycles the status previews the reclaim.
    loop.run_cycle(T0)
    loop.run_cycle(T0 + 60)
    fleet = kubectl.json("clusterreclaimpolicy", "fleet")
    status = fleet["status"]
    assert status["observedGeneration"] == 1
    ready = {c["type"]: c for c in status["conditions"]}["Ready"]
    assert ready["status"] == "True"
    previews = {(c["workload"], c["action"]) for c in status["candidates"]}
    assert ("ml/Deployment/train", "would reclaim") in previews
    assert ("ml/Deployment/train", "would annotate") in previews
    assert status["matchedWorkloads"] == 1
    table = kubectl.run("get", "clusterreclaimpolicies").splitlines()
    assert table[0].split() == [
        "NAME",
        "MODE",
        "MATCHED",
        "PENDING",
        "RECLAIMED",
        "LAST",
        "ACTION",
        "READY",
        "AGE",
    ]
    assert table[1].split()[:4] == ["fleet", "observe", "1", "1"]
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2

    # Enforce with kubectl patch: no restart, the ladder starts on the next cycle.
    kubectl.run(
        "patch",
        "clusterreclaimpolicy",
        "fleet",
        "--type=merge",
        "-p",
        '{"spec":{"mode":"enforce"}}',
    )
    kubectl.apply(HASTY)
    wait_for("enforce", lambda: generation_seen(parts, "ClusterReclaimPolicy", "fleet", 2))
    wait_for("the team policy", lambda: generation_seen(parts, "ReclaimPolicy", "hasty", 1))
    loop.run_cycle(T0 + 120)  # notify, for real this time, by the cluster policy
    steps = [(e.step.value, e.outcome.value, e.policy) for e in parts.ledger.all_events()]
    assert ("notify", "applied", "fleet") in steps
    hasty = kubectl.json("reclaimpolicy", "hasty", "-n", "ml")["status"]
    invalid = {c["type"]: c for c in hasty["conditions"]}["Invalid"]
    assert invalid["status"] == "True"
    assert invalid["reason"] == "DelegationRejected"
    assert (
        "spec.ladder.gracePeriod: 1m is shorter than the cluster minimum 10m" in invalid["message"]
    )

    # An edit the API server refuses (schema), and one only the controller can refuse
    # (a timezone that does not exist): the previous generation stays in force.
    refused = kubectl.run(
        "patch",
        "clusterreclaimpolicy",
        "fleet",
        "--type=merge",
        "-p",
        '{"spec":{"mode":"sometimes"}}',
        ok=False,
    )
    assert 'spec.mode: Unsupported value: "sometimes"' in refused
    kubectl.run(
        "patch",
        "clusterreclaimpolicy",
        "fleet",
        "--type=merge",
        "-p",
        '{"spec":{"activeWindows":["Mon-Fri 08:00-18:00 Mars/Olympus"]}}',
    )
    wait_for("the invalid edit", lambda: generation_seen(parts, "ClusterReclaimPolicy", "fleet", 3))
    loop.run_cycle(T0 + 180)  # annotate: generation 2 (enforce, no windows) acts
    assert (
        "gpu-guardian.io/flagged-at"
        in kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    )
    status = kubectl.json("clusterreclaimpolicy", "fleet")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert "generation 2 stays in force" in conditions["Ready"]["message"]
    assert "spec.activeWindows[0]" in conditions["Invalid"]["message"]
    assert "unknown timezone 'Mars/Olympus'" in conditions["Invalid"]["message"]
    events = [e for e in kube.objects("Event", "default") if e["reason"] == "PolicyInvalid"]
    assert events
    assert events[0]["involvedObject"]["name"] == "fleet"

    loop.run_cycle(T0 + 300)  # the team's 1m grace would be over: it has no effect
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    loop.run_cycle(T0 + 120 + 601)  # the cluster's 10m grace is over: reclaimed
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0
    loop.run_cycle(T0 + 120 + 700)
    row = kubectl.run("get", "crp", "fleet", "--no-headers").split()
    assert row[:2] == ["fleet", "enforce"]
    status = kubectl.json("clusterreclaimpolicy", "fleet")["status"]
    assert status["reclaimed"] == 1
    assert status["lastAction"] == "reclaim ml/Deployment/train"
