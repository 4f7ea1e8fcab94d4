"""Issue 7's "done when": real backfilled Prometheus, the engine, the planner, the executor
and the fake Kubernetes API, end to end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.rest import Conflict
from guardian.app.remediation.restore import restore_workload
from guardian.app.remediation.status import build_status
from guardian.cli import main as guardian_main
from guardian.model.policies import NOTEBOOK_STOPPED, Annotations
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from testbed.kubeapi import FakeKubeAPI

from .scenario import Controller, at, set_stage, start_controller

IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")
RACE = WorkloadRef("apps/v1", "Deployment", "ml", "race-train")


@pytest.fixture
def controller(
    prometheus: Any, kube: FakeKubeAPI, tmp_path: Path
) -> Iterator[tuple[Controller, Path]]:
    stage = set_stage(prometheus, kube, tmp_path)
    ctl = start_controller(stage.prometheus_url, stage.kubeconfig, stage.state, stage.policies)
    try:
        yield ctl, stage.state
    finally:
        ctl.close()


class HumanEdits:
    """Wraps the executor: a person excludes race-train while its reclaim is in flight."""

    def __init__(self, kube: FakeKubeAPI, inner: Any) -> None:
        self.kube = kube
        self.inner = inner
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def apply(self, action: Any, ws: Any, now: float) -> Any:
        if action.workload == RACE and action.step is LadderStep.RECLAIM and not self.raced:
            self.raced = True
            self.kube.patch(
                "Deployment",
                "race-train",
                {"metadata": {"annotations": {Annotations.EXCLUDE: "true"}}},
                "ml",
            )
        return self.inner.apply(action, ws, now)


def steps_of(ctl: Controller, ref: WorkloadRef) -> list[tuple[str, str]]:
    return [
        (e.step.value, e.outcome.value) for e in ctl.parts.ledger.all_events() if e.workload == ref
    ]


def reasons_of(ctl: Controller, ref: WorkloadRef) -> str:
    return "\n".join(e.reason for e in ctl.parts.ledger.all_events() if e.workload == ref)


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_idle_gpus_are_warned_then_reclaimed_and_restored(
    controller: tuple[Controller, Path], kube: FakeKubeAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    ctl, state = controller
    loop = ctl.parts.loop
    loop.executor = HumanEdits(kube, loop.executor)  # type: ignore[assignment]

    ctl.evaluate(range(40, 45))  # GpuIdle pending: nothing happens
    assert ctl.parts.ledger.all_events() == []

    ctl.evaluate([45])  # firing: notify
    assert steps_of(ctl, IDLE) == [("notify", "applied")]
    dep = kube.get("Deployment", "idle-train", "ml")
    assert dep["spec"]["replicas"] == 3
    assert Annotations.FLAGGED_AT not in (dep["metadata"].get("annotations") or {})

    ctl.evaluate([46])  # annotate, one step per cycle
    ann = kube.get("Deployment", "idle-train", "ml")["metadata"]["annotations"]
    assert ann[Annotations.PENDING_ACTION] == "scale to 0"
    assert ann[Annotations.PENDING_ACTION_AT] == "2023-11-14T23:08:20Z"  # notified at 45m + 10m

    ctl.evaluate(range(47, 55))  # the grace period
    assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3
    assert guardian_main(["status", "--state", str(state)]) == 0
    out = capsys.readouterr().out
    assert "ml/Deployment/idle-train" in out
    assert "next reclaim  due 2023-11-14T23:08:20Z" in out

    kube.fail_next(409, verb="patch", path="deployments/idle-train$")  # a conflict mid-action
    ctl.evaluate([55])

    # The idle Deployment: scaled to 0 in one conditional patch, original replicas recorded.
    dep = kube.get("Deployment", "idle-train", "ml")
    ann = dep["metadata"]["annotations"]
    assert dep["spec"]["replicas"] == 0
    assert ann[Annotations.ORIGINAL_REPLICAS] == "3"
    assert ann[Annotations.RECLAIMED_BY] == "idle-gpus"
    assert steps_of(ctl, IDLE) == [
        ("notify", "applied"),
        ("annotate", "applied"),
        ("reclaim", "planned"),
        ("reclaim", "applied"),
    ]
    patches = [
        r
        for r in kube.requests(verb="patch", path="deployments/idle-train$")
        if "spec" in (r.body or {})
    ]
    assert [r.status for r in patches] == [409, 200]  # read again, re-planned, applied
    assert ctl.parts.metrics.conflicts._value.get() >= 1

    # The conflict caused by a person excluding race-train: re-planned, refused.
    race = kube.get("Deployment", "race-train", "ml")
    assert race["spec"]["replicas"] == 3
    assert "re-checked before acting: the workload has gpu-guardian.io/exclude=true" in (
        reasons_of(ctl, RACE)
    )

    # The Notebook: stopped through its annotation, its StatefulSet never touched.
    assert NOTEBOOK_STOPPED in kube.get("Notebook", "nb", "ml")["metadata"]["annotations"]
    assert kube.get("StatefulSet", "nb", "ml")["spec"]["replicas"] == 1
    assert not kube.requests(verb="patch", path="statefulsets")

    # Untouched: busy, excluded, kube-system, and the one behind a stale exporter.
    for ns, name in (
        ("ml", "busy-serve"),
        ("ml", "excluded"),
        ("kube-system", "sys"),
        ("ml", "stale-train"),
    ):
        obj = kube.get("Deployment", name, ns)
        assert obj["spec"]["replicas"] == 3, name
        assert not kube.requests(verb="patch", path=f"deployments/{name}$"), name
    assert steps_of(ctl, WorkloadRef("apps/v1", "Deployment", "ml", "busy-serve")) == []
    assert "kube-system is always excluded" in reasons_of(
        ctl, WorkloadRef("apps/v1", "Deployment", "kube-system", "sys")
    )
    assert "exclude=true" in reasons_of(ctl, WorkloadRef("apps/v1", "Deployment", "ml", "excluded"))
    assert "GpuExporterStale is firing for node n2" in reasons_of(
        ctl, WorkloadRef("apps/v1", "Deployment", "ml", "stale-train")
    )

    # Status lists the reclaimed workloads with their restore commands.
    report = build_status(ctl.parts.ledger)
    assert {r["restore_command"] for r in report.reclaimed} == {
        "guardian restore ml/Deployment/idle-train",
        "guardian restore ml/Notebook/nb",
    }
    assert any(a["labels"]["alertname"] == "GpuIdle" for a in report.alerts)

    # Restore: the exact replicas, annotations cleared, then a warm-up.
    message = restore_workload(IDLE, loop.reader, loop.steps, at(56))
    assert message == "scaled back to 3"
    dep = kube.get("Deployment", "idle-train", "ml")
    assert dep["spec"]["replicas"] == 3
    assert set(dep["metadata"]["annotations"]) == {Annotations.RESTORED_AT}
    ctl.evaluate([57, 58])
    assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3
    assert "warming up: restored" in reasons_of(ctl, IDLE)

    # Excluding the reclaimed notebook restores it automatically.
    kube.patch("Notebook", "nb", {"metadata": {"annotations": {Annotations.EXCLUDE: "true"}}}, "ml")
    ctl.evaluate([59])
    assert NOTEBOOK_STOPPED not in kube.get("Notebook", "nb", "ml")["metadata"]["annotations"]
    assert ("restore", "applied") in steps_of(
        ctl, WorkloadRef("kubeflow.org/v1", "Notebook", "ml", "nb")
    )

    # No action was done twice.
    applied = [
        (e.workload, e.step)
        for e in ctl.parts.ledger.all_events()
        if e.outcome is StepOutcome.APPLIED
    ]
    assert len(applied) == len(set(applied))


def test_conflict_error_is_transient() -> None:
    assert Conflict("x").delay is None
