"""Both forms of a policy: files (GitOps) and cluster objects, through one model."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardian.cli import main as guardian_main
from guardian.model.policies_load import parse_policies, policy_from_object
from guardian_common.errors import ConfigErrors

CLUSTER = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ClusterReclaimPolicy
metadata: {name: fleet}
spec:
  delegation: allow
  ladder: {gracePeriod: 1h}
"""

TEAM = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: team, namespace: ml}
spec:
  ladder: {gracePeriod: 2h}
  activeWindows: ["Mon-Fri 09:00-17:00 Europe/Berlin"]
"""

# What `kubectl get clusterreclaimpolicies,reclaimpolicies -A -o yaml` prints.
EXPORT = """\
apiVersion: v1
kind: List
items:
- apiVersion: gpu-guardian.io/v1alpha1
  kind: ClusterReclaimPolicy
  metadata:
    name: fleet
    uid: 0b7c
    resourceVersion: "12"
    generation: 3
    creationTimestamp: "2026-01-01T00:00:00Z"
    annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
  spec: {mode: observe, delegation: allow}
  status: {observedGeneration: 3, matchedWorkloads: 1}
- apiVersion: gpu-guardian.io/v1alpha1
  kind: ReclaimPolicy
  metadata: {name: team, namespace: ml, uid: 1d2e}
  spec: {mode: sometimes}
"""


def test_both_kinds_in_files() -> None:
    fleet, team = parse_policies(CLUSTER + "---\n" + TEAM, "p.yaml")
    assert (fleet.kind, fleet.name, fleet.namespace) == ("ClusterReclaimPolicy", "fleet", None)
    assert (team.kind, team.name, team.namespace) == ("ReclaimPolicy", "ml/team", "ml")
    assert team.spec.active_windows == ("Mon-Fri 09:00-17:00 Europe/Berlin",)


def test_a_kubectl_export_is_read_without_its_server_fields() -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_policies(EXPORT, "export.yaml")
    assert [str(e) for e in info.value.errors] == [
        "export.yaml:18: items[1].spec.mode: Input should be 'observe' or 'enforce'"
    ]
    first_only = EXPORT.split("- apiVersion: gpu-guardian.io/v1alpha1\n  kind: ReclaimPolicy")[0]
    (fleet,) = parse_policies(first_only, "e.yaml")
    assert fleet.name == "fleet"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('  activeWindows: ["Mon-Fri 22:00-06:00 UTC"]', "a window across midnight is two windows"),
        ('  activeWindows: ["Mon-Fri 08:00-18:00 Mars/Olympus"]', "unknown timezone"),
        ("  reclaim: {when: sometimes}", "spec.reclaim.when"),
        ("  checkpoint: {enabled: true, onTimeout: never}", "spec.checkpoint.onTimeout"),
        ("  checkpoint: {timeout: 0s}", "spec.checkpoint.timeout"),
        ("  partial: sometimes", "spec.partial: Input should be 'notify' or 'rightSize'"),
    ],
)
def test_new_fields_are_checked_in_files(line: str, error: str) -> None:
    with pytest.raises(ConfigErrors, match=error):
        parse_policies(CLUSTER + line + "\n", "p.yaml")


def test_a_right_size_needs_the_reclaim_step() -> None:
    warn_only = CLUSTER.replace("{gracePeriod: 1h}", "{gracePeriod: 1h, reclaim: false}")
    with pytest.raises(ConfigErrors, match=r"p\.yaml:4: spec: partial: rightSize needs ladder"):
        parse_policies(warn_only + "  partial: rightSize\n", "p.yaml")


def test_object_form_names_the_field() -> None:
    obj = {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ReclaimPolicy",
        "metadata": {"name": "team", "namespace": "ml", "uid": "x", "generation": 2},
        "spec": {"activeWindows": ["Mon 09:00-10:00 Nowhere/City"]},
        "status": {"observedGeneration": 1},
    }
    with pytest.raises(ConfigErrors) as info:
        policy_from_object(obj)
    (only,) = info.value.errors
    assert only.field == "spec.activeWindows[0]"
    assert "unknown timezone 'Nowhere/City'" in only.reason
    obj["spec"] = {}
    assert policy_from_object(obj).name == "ml/team"


@pytest.mark.parametrize(
    ("alerts", "field"),
    [
        ({"names": ["GpuMemoryUnderutilized"]}, "spec.alerts.names"),
        ({"matchLabels": {"guardian_class": "rightsize"}}, "spec.alerts.matchLabels"),
    ],
)
def test_a_cluster_object_asking_for_memory_advice_is_invalid(
    alerts: dict[str, object], field: str
) -> None:
    # The CRD path refuses what a file refuses, in the same words (the object's status).
    obj = {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ClusterReclaimPolicy",
        "metadata": {"name": "fleet"},
        "spec": {"mode": "enforce", "alerts": alerts},
    }
    with pytest.raises(ConfigErrors) as info:
        policy_from_object(obj)
    (only,) = info.value.errors
    assert only.field == field
    assert only.reason == (
        "GpuMemoryUnderutilized is right-sizing advice (guardian_class: rightsize): "
        "no policy reclaims on it; it is notified on its own"
    )


def test_a_cluster_policy_has_no_namespace_and_teams_do_not_delegate() -> None:
    with pytest.raises(ConfigErrors, match=r"a ClusterReclaimPolicy has no metadata\.namespace"):
        parse_policies(CLUSTER.replace("{name: fleet}", "{name: fleet, namespace: ml}"), "p.yaml")
    with pytest.raises(ConfigErrors, match="only a cluster policy delegates"):
        parse_policies(TEAM + "  delegation: allow\n", "p.yaml")


def test_check_reports_a_team_policy_that_widens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = tmp_path / "policies.yaml"
    files.write_text(CLUSTER + "---\n" + TEAM, encoding="utf-8")
    assert guardian_main(["policies", "check", str(files)]) == 0
    out = capsys.readouterr().out
    assert "ReclaimPolicy ml/team" in out
    assert "namespace ml only" in out
    files.write_text(CLUSTER + "---\n" + TEAM.replace("2h", "10m"), encoding="utf-8")
    assert guardian_main(["policies", "check", str(files)]) == 1
    err = capsys.readouterr().err
    assert (
        "ml/team has no effect: spec.ladder.gracePeriod: "
        "10m is shorter than the cluster minimum 1h" in err
    )


def test_crd_command_prints_both_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    assert guardian_main(["policies", "crd"]) == 0
    out = capsys.readouterr().out
    assert "name: clusterreclaimpolicies.gpu-guardian.io" in out
    assert "name: reclaimpolicies.gpu-guardian.io" in out


def test_the_object_examples_pass_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).resolve().parents[4] / "examples/policies/objects/*.yaml"
    assert guardian_main(["policies", "check", str(examples)]) == 0
    assert "ok: 2 policy(ies)" in capsys.readouterr().out
