"""The remediation loop against the fake API with given alerts: dry-run, kill switch,
API errors, auto-restore on exclude, and the notifier's durable cursor."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.clusters import ClusterFilter
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.app.remediation.step_runner import WriteClock
from guardian.engine.remediation import PlannerSettings
from guardian.model.alerts import EvaluationHealth, GroupEvaluation, RuleOutcome
from guardian.model.labels import LabelSet
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from guardian.model.times import rfc3339
from guardian_common.errors import GuardianError
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

NOW = 1_700_000_000.0
DEPLOY = WorkloadRef("apps/v1", "Deployment", "ml", "train")
POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle}
spec:
  mode: enforce
  ladder: {gracePeriod: 2m, annotate: false}
  warmup: 1m
"""
ALERT = FiringAlert(
    LabelSet({"alertname": "GpuIdle", "guardian_class": "reclaimable", "namespace": "ml",
              "pod": "train-1", "node": "n1", "cluster": "c1"}),
    NOW - 3600, True, group="idle",
)  # fmt: skip


def evaluation(ts: float, group: str = "idle", ok: bool = True) -> GroupEvaluation:
    health = EvaluationHealth.OK if ok else EvaluationHealth.FAILED
    outcome = RuleOutcome("GpuIdle", health, reason=None if ok else "timeout")
    return GroupEvaluation(group, "r.yaml", ts, (outcome,), ())


def make_loop(reader: KubeReader, executor: Executor, tmp_path: Path, **planner: Any) -> Any:
    ledger = Ledger.open(str(tmp_path / "state.db"))
    loop = RemediationLoop(
        parse_policies(POLICY, "p.yaml"),
        LoopParts(reader, executor, ledger),
        LoopSource(lambda: [ALERT]),
        LoopSettings(PlannerSettings(**{"dry_run": False, **planner}), "gpu-guardian", 60),
    )
    return loop, ledger


@pytest.fixture
def seeded(kube: FakeKubeAPI) -> None:
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-x", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-1", "ml", node="n1", owners=[b.owner_reference(rs)]))


def run(loop: Any, *minutes: int) -> None:
    for minute in minutes:
        loop.on_evaluation(evaluation(NOW + minute * 60))


@pytest.mark.usefixtures("seeded")
def test_dry_run_records_would_and_writes_nothing(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path, dry_run=True)
    kube.clear_requests()
    run(loop, 0, 1, 2, 3)
    assert not [r for r in kube.requests() if r.verb not in ("get", "list")]
    steps = [(e.step, e.outcome) for e in ledger.all_events() if e.outcome is StepOutcome.DRY_RUN]
    assert steps == [
        (LadderStep.NOTIFY, StepOutcome.DRY_RUN),
        (LadderStep.RECLAIM, StepOutcome.DRY_RUN),
    ]
    assert "would scale Deployment train from 2 to 0" in ledger.all_events()[-1].reason


@pytest.mark.usefixtures("seeded")
def test_cycles_follow_evaluation_time_not_every_group(
    reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    loop.on_evaluation(evaluation(NOW))
    loop.on_evaluation(evaluation(NOW + 10))  # another group 10 s later: no second cycle
    assert [e.step for e in ledger.all_events()] == [LadderStep.NOTIFY]


@pytest.mark.usefixtures("seeded")
def test_failed_evaluation_blocks(reader: KubeReader, executor: Executor, tmp_path: Path) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    loop.on_evaluation(evaluation(NOW, ok=False))
    (event,) = ledger.all_events()
    assert event.outcome is StepOutcome.REFUSED
    assert "rule group idle: rule GpuIdle: failed (timeout)" in event.reason


@pytest.mark.usefixtures("seeded")
def test_kill_switch_annotation_stops_everything(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    kube.patch(
        "Namespace",
        "gpu-guardian",
        {"metadata": {"annotations": {"gpu-guardian.io/kill-switch": "true"}}},
    )
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0, 1, 2, 3)
    assert {e.outcome for e in ledger.all_events()} == {StepOutcome.REFUSED}
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2


@pytest.mark.usefixtures("seeded")
def test_forbidden_is_a_clear_failure_and_a_metric(
    kube: FakeKubeAPI,
    reader: KubeReader,
    executor: Executor,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0)
    kube.fail_next(403, verb="patch", message="deployments.apps is forbidden")
    run(loop, 3)
    failed = [e for e in ledger.all_events() if e.outcome is StepOutcome.FAILED]
    assert len(failed) == 1
    assert "forbidden by RBAC" in failed[0].reason
    assert loop.metrics.api_forbidden._value.get() == 1
    assert "grant the controller's ClusterRole" in caplog.text
    run(loop, 4)  # the next cycle tries again and succeeds
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0


@pytest.mark.usefixtures("seeded")
def test_three_conflicts_in_a_row_are_a_recorded_failure(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0)
    kube.fail_next(409, verb="patch", path="deployments/train$", times=3)
    run(loop, 3)
    failed = [e for e in ledger.all_events() if e.outcome is StepOutcome.FAILED]
    assert [(e.step, e.reason) for e in failed] == [
        (LadderStep.RECLAIM, "gave up after 3 conflicts")
    ]
    assert loop.metrics.conflicts._value.get() == 3
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    run(loop, 4)  # the next cycle reads again and succeeds
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0


@pytest.mark.usefixtures("seeded")
def test_not_found_drops_the_action(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0)
    kube.fail_next(404, verb="patch")
    run(loop, 3)
    assert not [
        e
        for e in ledger.all_events()
        if e.step is LadderStep.RECLAIM and e.outcome is not StepOutcome.PLANNED
    ]


@pytest.mark.usefixtures("seeded")
def test_exclude_on_reclaimed_restores_and_notifier_cursor(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0, 1, 2)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0
    seen = ledger.events_since(ledger.cursor("slack"))
    ledger.ack("slack", seen[-1].seq or 0)
    kube.patch(
        "Deployment",
        "train",
        {"metadata": {"annotations": {"gpu-guardian.io/exclude": "true"}}},
        "ml",
    )
    run(loop, 3)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    fresh = ledger.events_since(ledger.cursor("slack"))
    assert [(e.step, e.outcome) for e in fresh][-1] == (LadderStep.RESTORE, StepOutcome.APPLIED)
    assert fresh[-1].original_replicas == 2  # what the restore gave back
    assert all(e.seq is not None and e.seq > (seen[-1].seq or 0) for e in fresh)
    reclaim = next(
        e for e in seen if e.step is LadderStep.RECLAIM and e.outcome is StepOutcome.APPLIED
    )
    assert reclaim.original_replicas == 2
    assert reclaim.restore_command == "guardian restore ml/Deployment/train"


@pytest.mark.usefixtures("seeded")
def test_an_outage_mid_grace_holds_the_episode_and_the_ladder_resumes_after(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    # The source stops answering mid-grace: which clusters it serves is unknown, so every
    # alert is refused and none arrives. That is not the alerts' end (issue: the episode
    # was closed 1.3 s into an outage, and the workload never reclaimed).
    loop, ledger = make_loop(reader, executor, tmp_path)
    answering = [True]

    def source_clusters(_ts: float) -> frozenset[str]:
        if not answering[0]:
            raise GuardianError("connection refused")
        return frozenset({"c1"})

    loop.clusters = ClusterFilter(source_clusters=source_clusters)
    run(loop, 0)  # notified; the reclaim is due two minutes later
    (episode,) = {e.episode for e in ledger.all_events()}
    answering[0] = False
    run(loop, 1, 2, 3)  # down past the due time
    assert ledger.view(NOW + 180).open_episodes[DEPLOY][0] == episode
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    answering[0] = True
    run(loop, 4)  # the evidence is back: resumed in the same episode, said once
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2  # one more evaluation
    run(loop, 5)  # healthy for a full evaluation: the reclaim that was due
    events = ledger.all_events()
    said = [
        (e.episode, e.step)
        for e in events
        if e.outcome is StepOutcome.APPLIED or e.step is LadderStep.HOLD
    ]
    # Held once for the whole outage; then the wait for one more evaluation, and resumed.
    assert [(e.step, e.hold) for e in events if e.hold] == [
        (LadderStep.HOLD, HoldKind.OUTAGE),
        (LadderStep.RESUME, HoldKind.RESUMING),
        (LadderStep.RECLAIM, HoldKind.RESUMING),
    ]
    assert said == [
        (episode, LadderStep.NOTIFY),
        (episode, LadderStep.HOLD),
        (episode, LadderStep.RESUME),
        (episode, LadderStep.RECLAIM),
    ]
    assert [e.reason.split(" (")[0] for e in events if e.step is LadderStep.HOLD] == [
        f"held: no evidence since {rfc3339(NOW + 60)}"
    ]
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0


def test_a_deployment_with_one_busy_replica_is_never_scaled_down(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path
) -> None:
    # The reported failure: 2 replicas, one at 80 %, one at 0 %; replicas 2 -> 0.
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-x", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-1", "ml", node="n1", owners=[b.owner_reference(rs)]))
    kube.create(b.pod("train-2", "ml", node="n1", owners=[b.owner_reference(rs)]))
    loop, ledger = make_loop(reader, executor, tmp_path)  # only train-1 is idle

    run(loop, 0, 1, 2, 3, 4, 5)

    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    applied = [e.step for e in ledger.all_events() if e.outcome is StepOutcome.APPLIED]
    assert applied == [LadderStep.NOTIFY]  # told, never acted on
    refused = [e.reason for e in ledger.all_events() if e.outcome is StepOutcome.REFUSED]
    partly = (
        "partly idle, not reclaimed (1 of 2 pods idle; idle: train-1 (GPU idle); "
        "not idle: train-2 (busy or unknown: no idle alert))"
    )
    assert refused == [partly]
    events = [e for e in kube.objects("Event", "ml") if e.get("reason") == "GPUPartlyIdle"]
    assert len(events) == 1
    assert events[0]["involvedObject"]["name"] == "train"
    assert "idle: train-1" in events[0]["message"]
    assert "not idle: train-2" in events[0]["message"]
    # Once the other replica is idle too, the whole workload is, and it is reclaimed.
    second = FiringAlert(
        LabelSet({**ALERT.labels.to_dict(), "pod": "train-2"}), NOW - 3600, True, group="idle"
    )
    loop.alerts = lambda: [ALERT, second]
    run(loop, 6)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0


@pytest.mark.usefixtures("seeded")
def test_a_pod_recreated_under_its_name_mid_grace_is_not_the_idle_one(
    kube: FakeKubeAPI, reader: KubeReader, executor: Executor, tmp_path: Path, kube_clock: Any
) -> None:
    # Issue #28: series without pod_uid; the pod deleted and created again with the same
    # name during the grace period; its Deployment was reclaimed on the old pod's alert.
    loop, ledger = make_loop(reader, executor, tmp_path)
    run(loop, 0)  # notified
    old = kube.get("Pod", "train-1", "ml")
    kube.delete("Pod", "train-1", "ml")
    kube_clock.now = datetime.fromtimestamp(NOW + 60, tz=UTC)
    kube.create(b.pod("train-1", "ml", node="n1", owners=old["metadata"]["ownerReferences"]))
    run(loop, 1, 2, 3, 4)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    refused = [e.reason for e in ledger.all_events() if e.outcome is StepOutcome.REFUSED]
    recreated = (
        "not idle, not reclaimed (0 of 1 pod idle; not idle: train-1 "
        "(created 2023-11-14T22:14:20Z, after its alerts began))"
    )
    assert refused == [recreated]


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(
    ("lag", "recorded"),
    [
        (3.5, 3.5),  # the write 3.5 s after the slot: its time, not the slot's
        (-5.0, 0.0),  # a wall clock behind the slot: the slot
        (7200.0, 0.0),  # a slot two hours old is a replay: the slot
    ],
)
def test_a_step_is_recorded_at_the_time_of_its_write(
    kube: FakeKubeAPI,
    reader: KubeReader,
    executor: Executor,
    tmp_path: Path,
    lag: float,
    recorded: float,
) -> None:
    # The issue: in a fencing run the recorded step time was the cycle's slot, 3.5 s
    # before the write, before the writer even held the Lease.
    loop, ledger = make_loop(reader, executor, tmp_path)
    slots: list[float] = []
    loop.write_clock = WriteClock(lambda: slots[-1] + lag, max_skew=60.0)

    def at(minute: int) -> None:
        slots.append(NOW + minute * 60)
        run(loop, minute)

    for minute in (0, 1, 2, 3):
        at(minute)
    applied = [e for e in ledger.all_events() if e.outcome is StepOutcome.APPLIED]
    # The grace period runs from the notification as made: with the write 3.5 s late the
    # reclaim falls on the next slot.
    reclaim_slot = NOW + (180 if recorded else 120)
    assert [(e.step, e.at) for e in applied] == [
        (LadderStep.NOTIFY, NOW + recorded),
        (LadderStep.RECLAIM, reclaim_slot + recorded),
    ]
    written = kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    assert written["gpu-guardian.io/reclaimed-at"] == rfc3339(reclaim_slot + recorded)
