"""The shared episode state in the fake API: compare-and-swap writes, claims between two
leaders, the fence, pruning and the shard size limit."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from guardian.adapters.kube.episode_store import (
    EpisodeStore,
    SharedStateFull,
    decode,
    encode,
)
from guardian.adapters.kube.fence import FencedRest, NotLeader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.journal import EpisodeJournal, StepTaken
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.recording import StepRecorder
from guardian.model.labels import LabelSet
from guardian.model.reclaim import PlannedAction, Wait
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import (
    EpisodeState,
    InFlight,
    Outage,
    SharedEpisode,
    SlackParent,
    StepMark,
)
from testbed.kubeapi import FakeKubeAPI

NS = "gpu-guardian"
NOW = 1_700_000_000.0
REF = WorkloadRef("apps/v1", "Deployment", "ml", "train")
LABELS = LabelSet({"alertname": "GpuIdle", "namespace": "ml", "pod": "train-1"})


def action(step: LadderStep, episode: str = "e1", **extra: object) -> PlannedAction:
    return PlannedAction(REF, step, "idle", episode, "idle 2h", False, LABELS, **extra)  # type: ignore[arg-type]


def journal(rest: KubeRest, identity: str, **store: object) -> EpisodeJournal:
    j = EpisodeJournal(EpisodeStore(rest, NS, **store), identity)  # type: ignore[arg-type]
    j.refresh()
    return j


def test_a_record_survives_its_writer_in_the_cluster(kube: FakeKubeAPI, rest: KubeRest) -> None:
    a = journal(rest, "a")
    notify = action(LadderStep.NOTIFY, next_step=LadderStep.ANNOTATE, next_step_due=NOW + 600)
    a.claim(notify, NOW - 300, NOW)
    a.settle(notify, StepOutcome.APPLIED, NOW + 1)

    b = journal(rest, "b")  # a new leader with nothing local
    (record,) = b.episodes()
    assert record.steps == (StepMark(LadderStep.NOTIFY, StepOutcome.APPLIED, NOW + 1, "a"),)
    assert (record.started_at, record.inflight) == (NOW - 300, None)
    assert (record.next_step, record.next_step_due) == (LadderStep.ANNOTATE, NOW + 600)
    view = b.view()
    assert view.open_episodes == {REF: ("e1", NOW - 300, "idle")}
    assert view.steps("e1", real=True) == {LadderStep.NOTIFY: NOW + 1}
    with pytest.raises(StepTaken, match="already done by a"):
        b.claim(notify, NOW - 300, NOW + 60)
    (cm,) = kube.objects("ConfigMap", NS)
    assert cm["metadata"]["name"] == b.store.shard_of("e1")
    assert cm["metadata"]["labels"]["gpu-guardian.io/state"] == "episodes"
    assert json.loads(cm["data"]["e1"])["steps"] == [["notify", "applied", NOW + 1, "a"]]
    writes = kube.requests(path="configmaps")
    assert {r.verb for r in writes if r.verb != "get"} == {"create", "update"}
    assert all(r.field_manager == "gpu-guardian" for r in writes if r.verb != "get")


def test_two_writers_never_both_win(kube: FakeKubeAPI, rest: KubeRest) -> None:
    a, b = journal(rest, "a"), journal(rest, "b")  # both read the empty shards
    annotate = action(LadderStep.ANNOTATE)
    a.claim(annotate, NOW, NOW)
    seen: list[SharedEpisode | None] = []

    def change(current: SharedEpisode | None) -> SharedEpisode | None:
        seen.append(current)
        if current is None:  # B would start the episode itself
            return SharedEpisode("e1", REF, "idle", NOW, EpisodeState.OPEN, LABELS, NOW)
        return current

    # B's cache is stale: its create is a 409; it reads again and decides on A's record.
    stored = b.store.update("e1", change, NOW)
    assert seen[0] is None
    assert stored is not None
    assert stored.inflight is not None
    assert stored.inflight.by == "a"
    assert seen[-1] == stored
    conflicts = [r for r in kube.requests(path="configmaps") if r.status == 409]
    assert len(conflicts) == 1


def test_a_step_in_flight_by_a_dead_leader_is_claimed_again_once(rest: KubeRest) -> None:
    a = journal(rest, "a")
    reclaim = action(LadderStep.RECLAIM)
    a.claim(reclaim, NOW, NOW)  # ... and a dies before it applies or settles
    b = journal(rest, "b")
    b.claim(reclaim, NOW, NOW + 30)
    record = b.get("e1")
    assert record is not None
    assert record.inflight == InFlight(LadderStep.RECLAIM, 2, NOW + 30, "b")
    b.claim(reclaim, NOW, NOW + 31)  # B's own retry after a 409: no new attempt, no write
    assert b.get("e1") == record
    b.settle(reclaim, StepOutcome.APPLIED, NOW + 32, original_replicas=3)
    record = b.get("e1")
    assert record is not None
    assert (record.state, record.original_replicas, record.inflight) == (
        EpisodeState.RECLAIMED,
        3,
        None,
    )
    assert [(m.step, m.by) for m in record.steps] == [(LadderStep.RECLAIM, "b")]


def test_a_pending_step_is_told_once_whoever_leads(rest: KubeRest) -> None:
    a = journal(rest, "a")
    a.claim(action(LadderStep.NOTIFY), NOW, NOW)
    wait = Wait(REF, "grace period: reclaim due at X", "idle", "e1", LABELS, False,
                LadderStep.RECLAIM, NOW + 600)  # fmt: skip
    assert a.note_wait(wait, NOW + 60)
    assert not a.note_wait(wait, NOW + 120)
    b = journal(rest, "b")
    assert not b.note_wait(wait, NOW + 180)
    assert b.note_wait(replace(wait, reason="grace period: reclaim due at Y"), NOW + 240)
    record = b.get("e1")
    assert record is not None
    assert (record.next_step, record.next_step_due) == (LadderStep.RECLAIM, NOW + 600)


def _recorder(j: EpisodeJournal, tmp_path: Path, name: str) -> tuple[StepRecorder, Ledger]:
    ledger = Ledger.open(str(tmp_path / f"{name}.db"))  # each replica's own history
    return StepRecorder(ledger, RemediationMetrics(), j), ledger


def _said(ledger: Ledger) -> list[tuple[LadderStep, str]]:
    return [(e.step, e.reason.split(":")[0]) for e in ledger.all_events()]


def test_one_voice_across_leaders_for_held_silenced_and_resumed(
    rest: KubeRest, tmp_path: Path
) -> None:
    # The issue: a silenced reply was posted twice, once per leader; an outage is said
    # held once and resumed once, whichever leader sees what.
    a = journal(rest, "a")
    a.claim(action(LadderStep.NOTIFY), NOW, NOW)
    a.settle(action(LadderStep.NOTIFY), StepOutcome.APPLIED, NOW)
    silenced = Wait(REF, "silenced in Alertmanager by bob until T", "idle", "e1", LABELS)
    held = Wait(REF, "missing data is not idleness: rule group g last evaluated 31s ago",
                "idle", "e1", LABELS, kind=HoldKind.OUTAGE)  # fmt: skip
    rec_a, ledger_a = _recorder(a, tmp_path, "a")
    rec_a.waits([silenced], NOW + 60)
    rec_a.waits([silenced], NOW + 90)
    rec_a.waits([held], NOW + 120)
    later = replace(
        held, reason="missing data is not idleness: rule group g last evaluated 91s ago"
    )
    rec_a.waits([later], NOW + 180)  # the same outage, another reason: not said again
    b = journal(rest, "b")  # failover: b leads with its own, empty ledger
    rec_b, ledger_b = _recorder(b, tmp_path, "b")
    rec_b.waits([later], NOW + 240)
    # The evidence is back (no hold this cycle): resumed, by b alone; the silence that a
    # said before the outage is said again after it.
    rec_b.waits([silenced], NOW + 250)
    rec_b.waits([silenced], NOW + 300)
    a.invalidate()
    a.refresh()
    rec_a.waits([], NOW + 420)  # a leads again: b already said it resumed
    assert _said(ledger_a) == [
        (LadderStep.GRACE, "silenced in Alertmanager by bob until T"),
        (LadderStep.HOLD, "held"),
    ]
    assert _said(ledger_b) == [
        (LadderStep.RESUME, "resumed"),
        (LadderStep.GRACE, "silenced in Alertmanager by bob until T"),
    ]
    record = b.get("e1")
    assert record is not None
    assert record.outage == Outage(NOW + 120, NOW + 250)
    assert [e.hold for e in ledger_b.all_events()] == [HoldKind.RESUMING, HoldKind.GUARD]


def test_the_fence_stops_every_write(kube: FakeKubeAPI, rest: KubeRest) -> None:
    def fence() -> None:
        raise NotLeader("lease lost")

    fenced = journal(FencedRest(rest, fence), "a")  # reads still work
    kube.clear_requests()
    with pytest.raises(NotLeader):
        fenced.claim(action(LadderStep.NOTIFY), NOW, NOW)
    assert [r.verb for r in kube.requests()] == []
    assert kube.objects("ConfigMap", NS) == []


def test_ended_episodes_are_pruned_and_a_full_shard_refuses(
    kube: FakeKubeAPI, rest: KubeRest
) -> None:
    j = journal(rest, "a", shards=1, retention=3600.0)
    j.claim(action(LadderStep.NOTIFY), NOW, NOW)
    j.end("e1", EpisodeState.CLOSED, NOW + 10)
    j.claim(action(LadderStep.NOTIFY, "e2"), NOW, NOW + 3000)
    assert {e.episode for e in j.episodes()} == {"e1", "e2"}
    j.claim(action(LadderStep.NOTIFY, "e3"), NOW, NOW + 3700)  # e1 ended over an hour ago
    assert {e.episode for e in j.episodes()} == {"e2", "e3"}
    assert journal(rest, "b", shards=1).get("e1") is None

    small = journal(rest, "a", shards=1)
    small.claim(action(LadderStep.NOTIFY, "f1"), NOW, NOW + 3700)
    data = kube.get("ConfigMap", small.store.shard_of("f1"), NS)["data"]
    small.store.max_bytes = sum(len(v) for v in data.values()) + 50  # room for less than one more
    with pytest.raises(SharedStateFull, match=r"raise remediation\.shared_state\.shards"):
        small.claim(action(LadderStep.NOTIFY, "f2"), NOW, NOW + 3700)
    assert small.get("f2") is None


def test_codec_round_trip_and_an_unreadable_record_is_kept(
    kube: FakeKubeAPI, rest: KubeRest
) -> None:
    record = SharedEpisode(
        "e1",
        REF,
        "idle",
        NOW,
        EpisodeState.RECLAIMED,
        LABELS,
        NOW + 9,
        steps=(StepMark(LadderStep.NOTIFY, StepOutcome.DRY_RUN, NOW + 1.25, "a"),),
        inflight=InFlight(LadderStep.RECLAIM, 2, NOW + 8, "b"),
        next_step=LadderStep.RECLAIM,
        next_step_due=NOW + 600,
        planned="grace",
        original_replicas=2,
        slack=SlackParent("episode:x", "#gpu", "C1", "171.000100", "x", {"phase": "grace"}),
    )
    assert decode("e1", encode(record)) == record
    j = journal(rest, "a", shards=1)
    j.claim(action(LadderStep.NOTIFY), NOW, NOW)
    name = j.store.shard_of("e1")
    kube.patch("ConfigMap", name, {"data": {"future": '{"v": 2}'}}, NS)
    j.store.load()
    assert [e.episode for e in j.episodes()] == ["e1"]
    j.settle(action(LadderStep.NOTIFY), StepOutcome.APPLIED, NOW + 1)
    assert kube.get("ConfigMap", name, NS)["data"]["future"] == '{"v": 2}'
