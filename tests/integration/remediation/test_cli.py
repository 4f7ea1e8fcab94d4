"""``guardian restore`` and ``guardian status`` on a real client and the fake API; and,
where kubectl is installed, a person using kubectl on what the controller did."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.cli import main as guardian_main
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import PlannedAction
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef
from guardian.model.times import rfc3339
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

REF = WorkloadRef("apps/v1", "Deployment", "ml", "train")
NOW = 1_700_000_000.0


@pytest.fixture
def state(kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path) -> Path:
    """The state database once train (3 replicas) is reclaimed, as the loop leaves it."""
    kube.create(b.deployment("train", "ml", replicas=3))
    action = PlannedAction(REF, LadderStep.RECLAIM, "idle", "ep1", "GpuIdle", False, LabelSet())
    ws = reader.workload(REF)
    executor.apply(action, ws, NOW)
    path = tmp_path / "state.db"
    ledger = Ledger.open(str(path))
    try:
        ledger.open_episode(REF, "ep1", NOW - 600, "idle")
        ledger.record(
            RemediationEvent(
                "ep1",
                REF,
                LadderStep.RECLAIM,
                StepOutcome.APPLIED,
                NOW,
                "idle",
                "scaled",
                LabelSet(),
                original_replicas=3,
            )
        )
        ledger.set_episode_state("ep1", EpisodeState.RECLAIMED)
    finally:
        ledger.close()
    return path


def test_restore_and_status_commands(
    kube: FakeKubeAPI, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kc"))

    assert guardian_main(["status", "--state", str(state), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reclaimed"][0]["restore_command"] == "guardian restore ml/Deployment/train"
    assert report["reclaimed"][0]["original_replicas"] == 3

    argv = ["restore", "ml/deploy/train", "--kubeconfig", kubeconfig, "--state", str(state)]
    assert guardian_main([*argv, "--dry-run"]) == 0
    assert "would restore" in capsys.readouterr().out
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0

    assert guardian_main(argv) == 0
    assert capsys.readouterr().out.strip() == "ml/Deployment/train: scaled back to 3"
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 3
    assert guardian_main(["status", "--state", str(state)]) == 0
    assert "Reclaimed workloads (0)" in capsys.readouterr().out

    assert guardian_main(argv) == 1
    assert "was not reclaimed by gpu-guardian" in capsys.readouterr().err
    assert guardian_main(["restore", "train", "--kubeconfig", kubeconfig]) == 2  # bad input
    assert "expected NAMESPACE/KIND/NAME" in capsys.readouterr().err
    assert guardian_main(["restore", "ml/widget/x", "--kubeconfig", kubeconfig]) == 1
    assert "no served kind matches 'widget'" in capsys.readouterr().err


def test_restore_takes_the_loops_step_path(
    kube: FakeKubeAPI, state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 409 is read again and retried; the outcome, a failure too, goes to the ledger."""
    argv = ["restore", "ml/Deployment/train", "--state", str(state), "--kubeconfig"]
    argv.append(str(kube.write_kubeconfig(tmp_path / "kc")))

    kube.fail_next(409, verb="patch", times=3)
    assert guardian_main(argv) == 1
    assert "gave up after 3 conflicts" in capsys.readouterr().err
    kube.fail_next(409, verb="patch")
    assert guardian_main(argv) == 0
    assert capsys.readouterr().out.strip() == "ml/Deployment/train: scaled back to 3"

    patches = [r.status for r in kube.requests(verb="patch", path="deployments/train$")]
    assert patches == [200, 409, 409, 409, 409, 200]  # the reclaim, then the two restores
    ledger = Ledger.open(str(state))
    try:
        events = [e for e in ledger.all_events() if e.step is LadderStep.RESTORE]
    finally:
        ledger.close()
    assert [(e.outcome, e.reason) for e in events] == [
        (StepOutcome.FAILED, "gave up after 3 conflicts"),
        (StepOutcome.APPLIED, "scaled back to 3: requested by guardian restore"),
    ]
    assert events[1].original_replicas == 3


def test_status_needs_an_existing_state_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert guardian_main(["status"]) == 2  # a usage error, as every missing input
    assert "give --config or --state" in capsys.readouterr().err
    missing = tmp_path / "missing.db"
    assert guardian_main(["status", "--state", str(missing)]) == 1
    assert f"no state database at {missing}" in capsys.readouterr().err
    assert not missing.exists()


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.usefixtures("state")
def test_kubectl_sees_and_undoes_a_reclaim(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kc"))

    def kubectl(*args: str) -> str:
        done = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, "-n", "ml", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    annotations = json.loads(
        kubectl("get", "deployment", "train", "-o", "jsonpath={.metadata.annotations}")
    )
    assert annotations[Annotations.ORIGINAL_REPLICAS] == "3"
    kubectl("annotate", "deployment", "train", f"{Annotations.EXCLUDE}=true")
    kubectl("scale", "deployment", "train", "--replicas=1")  # a person wakes it up by hand
    message = executor.restore(reader.workload(REF), NOW + 60)
    assert message == "left at 1 replica (changed since the reclaim)"
    assert kubectl("get", "deployment", "train", "-o", "jsonpath={.spec.replicas}") == "1"


def test_explain_at_a_past_time_reads_the_state_database(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["explain", "ml/deployment/train", "--state", str(state)]
    assert guardian_main([*argv, "--at", rfc3339(NOW + 1), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["decision"]["step"], answer["decision"]["outcome"]) == ("reclaim", "applied")
    assert guardian_main([*argv, "--at", rfc3339(NOW - 1)]) == 0
    assert "nothing recorded before then" in capsys.readouterr().out
    assert guardian_main(argv) == 2  # without a controller only --at can be answered
    assert "give --url" in capsys.readouterr().err
    assert guardian_main([*argv, "--at", "yesterday"]) == 2
    assert "--at: not an RFC 3339 time" in capsys.readouterr().err
