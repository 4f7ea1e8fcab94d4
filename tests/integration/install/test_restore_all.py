"""`guardian restore --all`, the first step of an uninstall, against the fake API server and
a fleet reclaimed by today's executor: a dry run first that changes nothing, one line per
workload; then every reclaimed workload back as it was, and with --remove-annotations no
annotation of ours left anywhere, while everyone else's stay."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from guardian.cli import main
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

from .reclaimed import NS, THEIRS, Before, our_annotations, reclaim_fleet

WHEN = "(reclaimed at 2023-11-14T23:13:20Z by reclaim-idle-gpus)"


@pytest.fixture
def kubeconfig(kube: FakeKubeAPI, api_client: Any, tmp_path: Path) -> str:
    reclaim_fleet(kube, api_client)
    return str(kube.write_kubeconfig(tmp_path / "admin.kubeconfig"))


def _restore(kubeconfig: str, *flags: str) -> int:
    return main(["restore", "--all", "--kubeconfig", kubeconfig, *flags])


def test_the_dry_run_lists_every_reclaimed_workload_and_changes_nothing(
    kube: FakeKubeAPI, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = our_annotations(kube)
    kube.clear_requests()
    assert _restore(kubeconfig, "--dry-run") == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"ml/CronJob/nightly: would unsuspend it {WHEN}",
        f"ml/Deployment/train: would scale back from 0 to 3 {WHEN}",
        f"ml/Notebook/nb: would start the notebook {WHEN}",
        f"ml/StatefulSet/serve: would scale back from 0 to 2 {WHEN}",
    ]
    assert "dry run: nothing changed (4 to do)" in err
    assert "3 other objects carry gpu-guardian.io annotations" in err
    writes = [r for r in kube.requests() if r.verb not in ("get", "list", "watch")]
    assert writes == []
    assert our_annotations(kube) == before


def test_restore_all_then_remove_annotations_leaves_nothing_of_ours(
    kube: FakeKubeAPI, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _restore(kubeconfig, "--remove-annotations", "--dry-run") == 0
    dry, _ = capsys.readouterr()
    assert len(dry.splitlines()) == 8, dry  # 4 reclaimed, flagged, snoozed, bare pod, namespace
    assert "Namespace/ml: would remove 1 annotation: gpu-guardian.io/exclude-until" in dry

    assert _restore(kubeconfig, "--remove-annotations") == 0
    out, err = capsys.readouterr()
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    assert len(lines) == 8, out
    assert "8 done, 0 failed" in err
    assert lines["ml/Deployment/train"] == "scaled back to 3; removed 1 annotation"  # restored-at
    assert lines["ml/Deployment/flagged"] == "removed 6 annotations"
    assert lines["Namespace/ml"] == "removed 1 annotation"

    # Nothing we scaled down stays down, nothing we suspended stays suspended.
    before = Before()
    assert kube.get("Deployment", "train", NS)["spec"]["replicas"] == before.train_replicas
    assert kube.get("StatefulSet", "serve", NS)["spec"]["replicas"] == before.serve_replicas
    assert kube.get("CronJob", "nightly", NS)["spec"]["suspend"] is False
    assert kube.get("Job", "nightly-1", NS)["spec"]["suspend"] is False
    assert kube.get("HorizontalPodAutoscaler", "train", NS)["spec"]["minReplicas"] == 2
    assert kube.get("Deployment", "flagged", NS)["spec"]["replicas"] == 1
    # No annotation of ours anywhere; everyone else's kept.
    assert our_annotations(kube) == {}
    annotations = kube.get("Deployment", "train", NS)["metadata"]["annotations"]
    assert THEIRS.items() <= annotations.items()
    assert kube.get("Deployment", "untouched", NS)["spec"]["replicas"] == 2

    assert _restore(kubeconfig) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert "nothing to restore" in err


def test_plain_restore_all_restores_and_says_what_else_is_marked(
    kube: FakeKubeAPI, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _restore(kubeconfig) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "ml/CronJob/nightly: unsuspended",
        "ml/Deployment/train: scaled back to 3",
        "ml/Notebook/nb: notebook started",
        "ml/StatefulSet/serve: scaled back to 2",
    ]
    assert "4 done, 0 failed" in err
    # The restored ones carry restored-at (the warm-up clock); the others their marks.
    assert "other objects carry gpu-guardian.io annotations" in err
    assert kube.get("Deployment", "train", NS)["spec"]["replicas"] == 3


def test_a_running_controller_is_named_before_anything_is_restored(
    kube: FakeKubeAPI, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lease = b.lease("gpu-guardian", "gpu-guardian", holder="gpu-guardian-controller-7d9-x")
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    lease["spec"]["renewTime"] = now
    kube.create(lease)
    assert _restore(kubeconfig, "--dry-run") == 0
    _, err = capsys.readouterr()
    assert "warning: the controller still runs (Lease held by gpu-guardian-controller-7d9-x" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["restore"], "give NAMESPACE/KIND/NAME, or --all"),
        (["restore", "ml/Deployment/x", "--all"], "give NAMESPACE/KIND/NAME or --all, not both"),
        (["restore", "ml/Deployment/x", "--remove-annotations"], "goes with --all"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]
