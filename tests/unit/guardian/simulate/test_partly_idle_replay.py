"""The replay judges a reclaim on the pods each workload had at the time, read from
history, and reaches the controller's decision: a partly idle workload is held (its idle
and busy parts named) and what a right-size would have freed is counted; an idle one is
reclaimed as before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from guardian.engine.notify.findings import PriceTable
from guardian.engine.remediation import PlannerSettings
from guardian.engine.simulate.ladder_replay import LadderReplay, replay_ladder
from guardian.engine.simulate.partial_outcomes import right_sizes
from guardian.engine.simulate.partly_idle import IdlePart, PartlyIdleRun
from guardian.engine.simulate.pod_tracks import GpuTrack, members_at
from guardian.engine.simulate.reclaim_outcomes import reclaim_outcome, usage_of
from guardian.engine.simulate.replay_records import ReplaySources
from guardian.model.alerts import TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    MemberPod,
    NamespaceState,
    PodOwner,
    WorkloadState,
)
from guardian.model.remediation_events import WorkloadRef
from tests.unit.guardian.remediation.factories import enforce
from tests.unit.guardian.simulate.test_ladder_replay import LABELS, T0, timeline, transition

WEB = WorkloadRef("apps/v1", "Deployment", "ml", "web")
BIG = WorkloadRef("apps/v1", "StatefulSet", "ml", "big")
PRICES = PriceTable({"A100": 2.0})
STEP = 60.0
END = 20  # minutes replayed


def minute(m: int) -> float:
    """The idle group's cycle in minute ``m`` (test_ladder_replay's timeline)."""
    return T0 + m * 60 + 10


def track(pod: str, device: str, first: int = -60, busy: Sequence[int] = ()) -> GpuTrack:
    """A GPU ``pod`` held on the cycles' grid from minute ``first`` to the end."""
    held = tuple(round(minute(m) * 1000) for m in range(first, END + 1))
    stamps = tuple(round(minute(m) * 1000) for m in busy)
    return GpuTrack(pod, device, "n1", "NVIDIA A100", held, stamps)


class HistoryPods:
    """A PodSource over fixed tracks: records when the replay asks to read."""

    def __init__(self, tracks: dict[WorkloadRef, list[GpuTrack]]) -> None:
        self.usages = {
            ref: usage_of(ref, STEP, found, minute(-60)) for ref, found in tracks.items()
        }
        self.loads: list[tuple[float, list[WorkloadRef]]] = []

    def load(self, roots: Any, ahead: Any, now: float) -> None:
        self.loads.append((now, [ref for ref, _cluster in roots]))

    def members(self, ref: WorkloadRef, now: float) -> tuple[MemberPod, ...] | None:
        usage = self.usages.get(ref)
        return None if usage is None else usage.members(now)


def snapshot(ref: WorkloadRef, alerting: Sequence[str]) -> ClusterSnapshot:
    """What a replay without cluster access starts from: the alerting pods only."""
    members = tuple(MemberPod(p, "", 0.0, "Running") for p in alerting)
    ws = WorkloadState(ref, "", "", 0.0, ActionKind.SCALE, replicas=1, members=members)
    owners = {("ml", p): PodOwner("ml", p, ref) for p in alerting}
    return ClusterSnapshot({ref: ws}, {"ml": NamespaceState("ml")}, owners)


def idle_from(pod: str, pending: int, **labels: str) -> dict[tuple[int, str], list[Any]]:
    alert = LabelSet({**LABELS, "pod": pod, **labels})
    return {
        (pending, "idle"): [transition(TransitionKind.PENDING, minute(pending), alert)],
        (pending + 1, "idle"): [transition(TransitionKind.FIRING, minute(pending), alert)],
    }


def merged(*events: dict[tuple[int, str], list[Any]]) -> dict[tuple[int, str], list[Any]]:
    out: dict[tuple[int, str], list[Any]] = {}
    for each in events:
        for key, found in each.items():
            out.setdefault(key, []).extend(found)
    return out


def run(snap: ClusterSnapshot, pods: HistoryPods, events: Any, **spec: Any) -> Any:
    pol = enforce(warmup="0s", ladder={"gracePeriod": "10m"}, **spec)
    sources = ReplaySources({("idle", "GpuIdle"): 300.0}, pods)
    settings = PlannerSettings(pipeline_groups=("pipeline",))
    r = LadderReplay([pol], snap, settings, cycle_interval=60.0, sources=sources)
    return replay_ladder(r, timeline(END + 1, events), lambda steps, _ahead: {})


def steps(log: Any) -> list[tuple[int, str]]:
    return [(round((s.at - T0 - 10) / 60), s.step.value) for s in log.steps]


def test_two_replicas_one_busy_is_partly_idle_never_reclaimed() -> None:
    pods = HistoryPods({WEB: [track("web-1", "g1"), track("web-2", "g2", busy=range(-60, 21))]})

    log = run(snapshot(WEB, ["web-1"]), pods, idle_from("web-1", 0))

    assert steps(log) == [(1, "notify"), (2, "annotate")]
    assert pods.loads == [(minute(11), [WEB])]  # read when its reclaim was first judged
    first = log.partly[0]
    assert (round((first.at - T0 - 10) / 60), first.workload) == (11, WEB)
    assert first.reason.startswith("partly idle, not reclaimed (1 of 2 pods idle")
    assert "idle: web-1 (GPU idle)" in first.reason
    assert "not idle: web-2 (busy or unknown: no idle alert)" in first.reason
    assert [(p.pod, p.idle) for p in first.pods] == [("web-1", True), ("web-2", False)]
    assert [(p.pod, p.devices) for p in first.idle] == [("web-1", None)]
    assert not [h for h in log.holds if h.workload == WEB]  # not a refusal: its own outcome

    spans = right_sizes(log.partly, pods.usages, log.steps, minute(END), PRICES)
    assert [(s.run.cycles, s.busy_again) for s in spans] == [(10, None)]  # minutes 11-20
    # web-1's GPU from minute 11 to the end (minute 20, exclusive): 9 minutes.
    assert spans[0].freed.gpu_hours == pytest.approx(9 / 60)
    assert spans[0].freed.cost == pytest.approx(9 / 60 * 2.0)


def test_a_pod_with_eight_gpus_one_busy_names_seven_of_eight() -> None:
    devices = [f"GPU-{i}" for i in range(8)]
    tracks = [track("big-0", d, busy=range(-60, 21) if d == "GPU-7" else ()) for d in devices]
    pods = HistoryPods({BIG: tracks})
    events = merged(*(idle_from("big-0", 0, uuid=d) for d in devices[:7]))

    log = run(snapshot(BIG, ["big-0"]), pods, events)

    assert steps(log) == [(1, "notify"), (2, "annotate")]
    first = log.partly[0]
    assert "big-0 (7 of its 8 GPUs idle)" in first.reason
    assert [(p.pod, p.devices) for p in first.idle] == [("big-0", frozenset(devices[:7]))]
    spans = right_sizes(log.partly, pods.usages, log.steps, minute(END), PRICES)
    assert spans[0].freed.gpu_hours == pytest.approx(7 * 9 / 60)  # the busy GPU is kept


def test_all_idle_is_reclaimed_as_before() -> None:
    pods = HistoryPods({WEB: [track("web-1", "g1"), track("web-2", "g2")]})
    events = merged(idle_from("web-1", 0), idle_from("web-2", 0))

    log = run(snapshot(WEB, ["web-1", "web-2"]), pods, events)

    assert steps(log) == [(1, "notify"), (2, "annotate"), (11, "reclaim")]
    assert log.steps[-1].reason.endswith("all 2 pods idle")
    assert log.partly == []
    outcome = reclaim_outcome(log.steps[-1], pods.usages[WEB], minute(END), 3600.0, PRICES)
    assert outcome.freed.gpu_hours == pytest.approx(2 * 9 / 60)


def test_a_replica_added_mid_way_holds_the_reclaim_until_its_own_evidence() -> None:
    # web-2 appears at minute 8, idle: its alert pends from minute 14 and fires at 15.
    pods = HistoryPods({WEB: [track("web-1", "g1"), track("web-2", "g2", first=8)]})
    events = merged(idle_from("web-1", 0), idle_from("web-2", 14))

    log = run(snapshot(WEB, ["web-1", "web-2"]), pods, events)

    assert steps(log) == [(1, "notify"), (2, "annotate"), (15, "reclaim")]
    assert [(round((p.at - T0 - 10) / 60), p.cycles) for p in log.partly] == [(11, 4)]
    assert "web-2 (busy or unknown: no idle alert)" in log.partly[0].reason
    spans = right_sizes(log.partly, pods.usages, log.steps, minute(END), PRICES)
    # web-1 alone from minute 11 until the whole workload is reclaimed at 15.
    assert [(s.run.cycles, s.freed.gpu_hours) for s in spans] == [(4, pytest.approx(4 / 60))]


def test_a_replica_never_seen_in_history_leaves_the_alerting_pods() -> None:
    log = run(snapshot(WEB, ["web-1"]), HistoryPods({}), idle_from("web-1", 0))

    assert steps(log) == [(1, "notify"), (2, "annotate"), (11, "reclaim")]


def test_a_right_size_policy_removes_the_idle_replica_and_frees_its_gpu_only() -> None:
    pods = HistoryPods({WEB: [track("web-1", "g1"), track("web-2", "g2", busy=range(-60, 21))]})

    log = run(snapshot(WEB, ["web-1"]), pods, idle_from("web-1", 0), partial="rightSize")

    assert steps(log) == [(1, "notify"), (2, "annotate"), (11, "reclaim")]
    reclaim = log.steps[-1]
    assert reclaim.removed == ("web-1",)
    assert "right-size" in reclaim.reason
    outcome = reclaim_outcome(reclaim, pods.usages[WEB], minute(END), 3600.0, PRICES)
    assert (outcome.restored_at, outcome.regret) == (None, False)
    assert outcome.freed.gpu_hours == pytest.approx(9 / 60)


def test_members_come_and_go_on_the_grid_and_a_pod_seen_from_the_start_is_old() -> None:
    since = minute(-60)
    tracks = [track("a", "g1"), track("b", "g2", first=5), track("b", "g3", first=5)]

    at_4 = members_at(tracks, minute(4), STEP, since)
    at_5 = members_at(tracks, minute(5), STEP, since)

    assert [m.name for m in at_4] == ["a", "b"]  # b holds a GPU a step later: it may exist
    assert [m.name for m in members_at(tracks, minute(3), STEP, since)] == ["a"]
    assert [m.name for m in members_at(tracks, minute(22), STEP, since)] == []
    a, b = at_5
    assert (a.created_at, a.phase, a.node, dict(a.gpus)) == (
        0.0,
        "Running",
        "n1",
        {"nvidia.com/gpu": 1},
    )
    assert (b.created_at, dict(b.gpus)) == (minute(4), {"nvidia.com/gpu": 2})


def test_a_right_size_ends_when_its_idle_part_is_busy_or_the_next_run_begins() -> None:
    usage = usage_of(WEB, STEP, [track("web-1", "g1", busy=[8]), track("web-2", "g2")], 0.0)
    busy_later = PartlyIdleRun(minute(2), WEB, "p", "", "why", (), (IdlePart("web-1"),))
    other_part = PartlyIdleRun(minute(12), WEB, "p", "", "why", (), (IdlePart("web-2"),))

    first, second = right_sizes([other_part, busy_later], {WEB: usage}, [], minute(END), PRICES)

    # web-1 from minute 2 until busy at 8; web-2 from minute 12 to the end.
    assert (first.run.at, first.busy_again, first.freed.gpu_hours) == (
        minute(2),
        minute(8),
        pytest.approx(6 / 60),
    )
    assert (second.busy_again, second.freed.gpu_hours) == (None, pytest.approx(8 / 60))
    # Its next run ends a right-size, as does a reclaim of the whole workload.
    again = PartlyIdleRun(minute(5), WEB, "p", "", "why", (), (IdlePart("web-2"),))
    capped = right_sizes([again, other_part], {WEB: usage}, [], minute(END), PRICES)
    assert capped[0].freed.gpu_hours == pytest.approx(7 / 60)
