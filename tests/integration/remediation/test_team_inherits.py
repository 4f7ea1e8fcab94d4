"""Issue 32 item 4: a team's ReclaimPolicy object that writes only ``mode`` and
``ladder.gracePeriod`` inherits the rest from the ClusterReclaimPolicy that delegates.

The API server stores the team's object as written (the namespaced CRD fills in no
defaults, or every field would count as written), the cluster's with its defaults; the
controller's cycle (informers, planner, executor, status writer) acts with the effective
policy: the team's grace period, the cluster's ladder without annotate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from guardian.adapters.sqlite_db import Database
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    RemediationParts,
    build_remediation,
)
from guardian.app.settings.remediation import RemediationSettings
from guardian.model.labels import LabelSet
from guardian.model.policies_crd import GROUP, VERSION, crds
from guardian.model.reclaim import FiringAlert
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

T0 = 1_700_000_000.0  # a day after the fake cluster's objects were created
API = f"{GROUP}/{VERSION}"
FLEET = {
    "apiVersion": API,
    "kind": "ClusterReclaimPolicy",
    "metadata": {"name": "fleet"},
    "spec": {
        "mode": "enforce",
        "delegation": "optIn",
        "alerts": {"names": ["GpuIdle"]},
        "ladder": {"gracePeriod": "10m", "annotate": False},
        "warmup": "10m",
    },
}
TEAM_SPEC = {"mode": "enforce", "ladder": {"gracePeriod": "20m"}}
TEAM = {
    "apiVersion": API,
    "kind": "ReclaimPolicy",
    "metadata": {"name": "training", "namespace": "ml"},
    "spec": TEAM_SPEC,
}


def idle_alert() -> FiringAlert:
    labels = {
        "alertname": "GpuIdle",
        "guardian_class": "reclaimable",
        "namespace": "ml",
        "pod": "train-abc-1",
        "node": "n1",
    }
    return FiringAlert(LabelSet(labels), T0 - 3600, True)


@pytest.fixture
def parts(kube: FakeKubeAPI, tmp_path: Path) -> Iterator[RemediationParts]:
    for crd in crds():
        kube.create(crd)
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


def wait_for(what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def seen(parts: RemediationParts, count: int) -> bool:
    objects = parts.loop.policy_objects
    assert objects is not None
    return sum(len(i.snapshot().objects) for i in objects.informers) >= count


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    return dict(conditions["Ready"])


@pytest.mark.timeout(120)
def test_the_cycle_acts_with_the_team_policy_as_it_inherits(
    kube: FakeKubeAPI, parts: RemediationParts, api_client: Any
) -> None:
    custom = client.CustomObjectsApi(api_client)
    fleet = custom.create_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies", FLEET)
    assert fleet["spec"]["hpa"] == "refuse"  # the cluster's object is defaulted
    team = custom.create_namespaced_custom_object(GROUP, VERSION, "ml", "reclaimpolicies", TEAM)
    assert team["spec"] == TEAM_SPEC  # the team's is stored as written
    wait_for("both policies", lambda: seen(parts, 2))
    loop = parts.loop

    loop.run_cycle(T0)  # notify, by the team's policy (optIn: it opts in)
    steps = [(e.step.value, e.outcome.value, e.policy) for e in parts.ledger.all_events()]
    assert steps == [("notify", "applied", "ml/training")]
    team = custom.get_namespaced_custom_object(GROUP, VERSION, "ml", "reclaimpolicies", "training")
    assert (ready(team)["status"], ready(team)["reason"]) == ("True", "Valid")
    status = team["status"]
    candidates = {(c["action"], c["at"]) for c in status["candidates"]}
    assert ("reclaim", "2023-11-14T22:33:20Z") in candidates  # T0 + 20m, no annotate
    fleet = custom.get_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies", "fleet")
    assert ready(fleet)["message"] == "generation 1 is in force"

    loop.run_cycle(T0 + 11 * 60)  # the cluster's 10m are over, the team's 20m are not
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    loop.run_cycle(T0 + 21 * 60)
    reclaimed = kube.get("Deployment", "train", "ml")
    assert reclaimed["spec"]["replicas"] == 0
    annotations = reclaimed["metadata"]["annotations"]
    assert annotations["gpu-guardian.io/reclaimed-by"] == "ml/training"
    assert "gpu-guardian.io/flagged-at" not in annotations  # the cluster's annotate: false


@pytest.mark.timeout(60)
def test_opt_in_without_a_team_policy_says_so_in_its_status(
    parts: RemediationParts, api_client: Any
) -> None:
    custom = client.CustomObjectsApi(api_client)
    custom.create_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies", FLEET)
    wait_for("the cluster policy", lambda: seen(parts, 1))
    parts.loop.run_cycle(T0)
    assert list(parts.ledger.all_events()) == []
    fleet = custom.get_cluster_custom_object(GROUP, VERSION, "clusterreclaimpolicies", "fleet")
    assert ready(fleet)["message"] == (
        "generation 1 is in force; nothing is enforced: delegation optIn and no team policy opts in"
    )
