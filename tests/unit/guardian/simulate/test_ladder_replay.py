"""The ladder replayed over a hand-made alert timeline: cycles, grace, limits, warm-up
after a restore, pipeline holds, and a schedule window flowing through the planner."""

from __future__ import annotations

import dataclasses
from typing import Any

from guardian.engine.remediation import PlannerSettings, plan
from guardian.engine.simulate.ladder_replay import LadderReplay, replay_ladder
from guardian.engine.simulate.reclaim_outcomes import hold_spans
from guardian.engine.simulate.rule_replay import EvaluationRecord
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    GroupHealth,
    MemberPod,
    NamespaceState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import LadderStep, WorkloadRef
from tests.unit.guardian.remediation.factories import enforce, policy

T0 = 1_700_000_000.0
WEB = WorkloadRef("apps/v1", "Deployment", "ml", "web")
LABELS = LabelSet(
    {
        "alertname": "GpuIdle",
        "guardian_class": "reclaimable",
        "namespace": "ml",
        "pod": "web-1",
        "node": "n1",
        "cluster": "c1",
    }
)
STALE = LabelSet(
    {"alertname": "GpuExporterStale", "guardian_class": "pipeline", "node": "n1", "cluster": "c1"}
)


def snapshot(**workload: Any) -> ClusterSnapshot:
    running = (MemberPod("web-1", "", 0.0, "Running"),)
    ws = WorkloadState(
        WEB, "uid", "1", 0.0, ActionKind.SCALE, replicas=1, members=running, **workload
    )
    return ClusterSnapshot(
        {WEB: ws}, {"ml": NamespaceState("ml")}, {("ml", "web-1"): PodOwner("ml", "web-1", WEB)}
    )


def transition(kind: TransitionKind, at: float, labels: LabelSet = LABELS, group: str = "idle"):
    return AlertTransition(
        kind=kind,
        previous=AlertState.INACTIVE,
        group=group,
        rule=labels["alertname"],
        labels=labels,
        annotations=LabelSet(),
        value=0.0,
        active_at=at,
        at=at,
        evidence=Evidence(EvaluationHealth.OK, at, "expr"),
    )


def timeline(
    minutes: int, events: dict[tuple[int, str], list[AlertTransition]]
) -> list[EvaluationRecord]:
    """Both groups evaluated every minute (pipeline first); transitions at given minutes."""
    out = []
    for m in range(minutes):
        for group in ("pipeline", "idle"):
            at = T0 + m * 60 + (0 if group == "pipeline" else 10)
            health = GroupHealth(group, at, True)
            out.append(EvaluationRecord(health, tuple(events.get((m, group), ()))))
    return out


def replay(pol, records, *, restore=lambda _s: None, snap=None, planner=plan, settings=None) -> Any:
    settings = settings or PlannerSettings(pipeline_groups=("pipeline",))
    r = LadderReplay([pol], snap or snapshot(), settings, cycle_interval=60.0, planner=planner)
    return replay_ladder(r, records, lambda steps, _ahead: {s.workload: restore(s) for s in steps})


def steps(log) -> list[tuple[int, str]]:
    return [(round((s.at - T0 - 10) / 60), s.step.value) for s in log.steps]


FIRING_AT_1 = {
    (0, "idle"): [transition(TransitionKind.PENDING, T0 + 10)],
    (1, "idle"): [transition(TransitionKind.FIRING, T0 + 70)],
}


def test_notify_annotate_then_reclaim_one_grace_period_after_the_notice() -> None:
    log = replay(enforce(warmup="0s", ladder={"gracePeriod": "10m"}), timeline(20, FIRING_AT_1))

    assert steps(log) == [(1, "notify"), (2, "annotate"), (11, "reclaim")]
    assert [round(c - T0) for c in log.cycles[:3]] == [10, 70, 130]


def test_observe_policies_are_replayed_as_enforcing() -> None:
    observing = policy(mode="observe", warmup="0s", ladder={"gracePeriod": "10m"})

    log = replay(observing, timeline(20, FIRING_AT_1))

    assert steps(log)[-1] == (11, "reclaim")


def test_busy_again_restores_and_the_warmup_then_holds_a_new_episode() -> None:
    events = dict(FIRING_AT_1)
    events[(13, "idle")] = [transition(TransitionKind.RESOLVED, T0 + 13 * 60 + 10)]
    events[(14, "idle")] = [transition(TransitionKind.PENDING, T0 + 14 * 60 + 10)]
    events[(15, "idle")] = [transition(TransitionKind.FIRING, T0 + 15 * 60 + 10)]
    pol = enforce(warmup="5m", ladder={"gracePeriod": "10m"})

    log = replay(pol, timeline(30, events), restore=lambda s: s.at + 120)

    # Reclaimed at 11, its owner wants it back at 13: restored there; warm-up 5 min, so
    # the alert firing again at 15 starts its ladder at 18, and its grace ends at 28.
    assert steps(log) == [
        (1, "notify"),
        (2, "annotate"),
        (11, "reclaim"),
        (18, "notify"),
        (19, "annotate"),
        (28, "reclaim"),
    ]
    assert log.restores == [(T0 + 11 * 60 + 10 + 120, WEB)]
    warm = [h for h in log.holds if h.reason.startswith("warming up")]
    assert [round((h.at - T0 - 10) / 60) for h in warm] == [15, 16, 17]


def test_a_pipeline_alert_on_the_node_holds_the_ladder_and_is_reported_as_one_span() -> None:
    events = dict(FIRING_AT_1)
    events[(4, "pipeline")] = [transition(TransitionKind.PENDING, T0 + 240, STALE, "pipeline")]
    events[(8, "pipeline")] = [transition(TransitionKind.RESOLVED, T0 + 480, STALE, "pipeline")]

    log = replay(enforce(warmup="0s", ladder={"gracePeriod": "5m"}), timeline(20, events))

    assert steps(log) == [(1, "notify"), (2, "annotate"), (8, "reclaim")]
    spans = hold_spans(log.holds, log.cycles, "missing data is not idleness")
    assert [
        (round((s.start - T0 - 10) / 60), round((s.end - T0 - 10) / 60), s.cycles) for s in spans
    ] == [(4, 7, 4)]
    assert spans[0].workload == WEB


def test_pipeline_alert_without_a_node_holds_every_action_in_its_cluster() -> None:
    everywhere = LabelSet(
        {"alertname": "GpuExporterDown", "guardian_class": "pipeline", "cluster": "c1"}
    )
    events = dict(FIRING_AT_1)
    events[(3, "pipeline")] = [transition(TransitionKind.PENDING, T0 + 180, everywhere, "pipeline")]
    events[(5, "pipeline")] = [
        transition(TransitionKind.RESOLVED, T0 + 300, everywhere, "pipeline")
    ]

    log = replay(enforce(warmup="0s"), timeline(8, events))

    cluster_wide = [h for h in log.holds if h.workload is None]
    assert [round((h.at - T0 - 10) / 60) for h in cluster_wide] == [3, 4]
    assert {h.cluster for h in cluster_wide} == {"c1"}


def test_per_namespace_limit_counts_the_replayed_reclaims() -> None:
    second = WorkloadRef("apps/v1", "Deployment", "ml", "other")
    snap = snapshot()
    running = (MemberPod("other-1", "", 0.0, "Running"),)
    other = dataclasses.replace(snap.workloads[WEB], ref=second, members=running)
    snap = dataclasses.replace(
        snap,
        workloads={WEB: snap.workloads[WEB], second: other},
        pod_owners={**snap.pod_owners, ("ml", "other-1"): PodOwner("ml", "other-1", second)},
    )
    other_labels = LabelSet({**LABELS, "pod": "other-1"})
    events = {
        (0, "idle"): [
            transition(TransitionKind.PENDING, T0 + 10),
            transition(TransitionKind.PENDING, T0 + 10, other_labels),
        ],
        (1, "idle"): [
            transition(TransitionKind.FIRING, T0 + 70),
            transition(TransitionKind.FIRING, T0 + 70, other_labels),
        ],
    }
    pol = enforce(warmup="0s", ladder={"gracePeriod": "5m"}, limits={"perNamespacePerHour": 1})

    log = replay(pol, timeline(12, events), snap=snap)

    reclaims = [
        (s.workload.name, round((s.at - T0 - 10) / 60))
        for s in log.steps
        if s.step is LadderStep.RECLAIM
    ]
    assert reclaims == [("other", 6)]
    assert any("reclaims per hour in namespace ml" in h.reason for h in log.holds)


# T0 is Tuesday 2023-11-14 22:13:20 UTC, and minute k's cycle runs at T0 + 10 s + k min:
# this window opens between minutes 9 and 10 and closes between minutes 19 and 20.
WINDOW = "Tue 22:23-22:33 UTC"


def test_a_schedule_window_delays_the_ladder_until_it_opens() -> None:
    log = replay(
        enforce(
            warmup="0s",
            ladder={"gracePeriod": "5m"},
            activeWindows=[WINDOW],
            notifyOutsideWindows=False,
        ),
        timeline(30, FIRING_AT_1),
    )

    # Nothing before minute 10; then one step per cycle, grace counted from the notice.
    assert steps(log) == [(10, "notify"), (11, "annotate"), (15, "reclaim")]
    assert log.holds == []  # waiting for a window is not a refusal


def test_a_notice_outside_the_window_and_a_reclaim_that_waits_for_the_next_one() -> None:
    # Notified at once; the grace period ends at minute 6, outside the window, so the
    # rest of the ladder waits for it to open, then goes on one step per cycle.
    log = replay(
        enforce(warmup="0s", ladder={"gracePeriod": "5m"}, activeWindows=[WINDOW]),
        timeline(30, FIRING_AT_1),
    )

    assert steps(log) == [(1, "notify"), (10, "annotate"), (11, "reclaim")]
