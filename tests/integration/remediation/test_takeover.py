"""Two replicas, each with its own SQLite, one cluster: a new leader goes on with the
episode the old one started (no second notify, the same due time, one reclaim), a step
the old leader died in the middle of is found applied or applied once, a restore done
outside the ladder ends the episode, and a leader whose hold went stale writes nothing."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.fence import FencedRest
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.leader import Clocks, LeaseElector, LeaseTiming
from guardian.app.remediation.loop import LoopParts, LoopSettings, LoopSource, RemediationLoop
from guardian.app.remediation.reconcile import FOUND_APPLIED, RESTORED_OUTSIDE
from guardian.app.remediation.status import build_status
from guardian.app.remediation.status_cluster import read_episodes
from guardian.app.settings.remediation import RemediationSettings
from guardian.cli import main as guardian_main
from guardian.engine.remediation import PlannerSettings
from guardian.model.policies import Annotations
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import FiringAlert
from guardian.model.remediation_events import LadderStep, StepOutcome
from guardian.model.times import rfc3339
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

from .test_loop import ALERT, DEPLOY, NOW, evaluation

POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle}
spec:
  mode: enforce
  ladder: {gracePeriod: 5m}
  warmup: 1m
"""
GRACE = 300.0


@dataclass
class Replica:
    loop: RemediationLoop
    ledger: Ledger
    journal: EpisodeJournal

    def at(self, *minutes: float) -> None:
        for minute in minutes:
            self.loop.on_evaluation(evaluation(NOW + minute * 60))

    def applied(self) -> list[tuple[LadderStep, str]]:
        return [
            (e.step, e.reason) for e in self.ledger.all_events() if e.outcome is StepOutcome.APPLIED
        ]


def replica(rest: KubeRest, tmp_path: Path, name: str, alerts: list[FiringAlert]) -> Replica:
    reader = KubeReader(rest)
    ledger = Ledger.open(str(tmp_path / f"{name}.db"))
    journal = EpisodeJournal(EpisodeStore(rest, "gpu-guardian"), name)
    loop = RemediationLoop(
        parse_policies(POLICY, "p.yaml"),
        LoopParts(reader, Executor(rest, reader, instance=name), ledger, journal),
        LoopSource(lambda: alerts),
        LoopSettings(PlannerSettings(dry_run=False), "gpu-guardian", 60),
    )
    return Replica(loop, ledger, journal)


@pytest.fixture(autouse=True)
def seeded(kube: FakeKubeAPI) -> None:
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-x", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-1", "ml", node="n1", owners=[b.owner_reference(rs)]))


def _successful_patches(kube: FakeKubeAPI) -> list[dict[str, Any]]:
    return [
        r.body for r in kube.requests(verb="patch", path="deployments/train$") if r.status == 200
    ]


def test_the_new_leader_goes_on_where_the_old_one_stopped(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path
) -> None:
    alerts = [ALERT]
    a = replica(rest, tmp_path, "a", alerts)
    a.at(0, 1, 2)  # notify, annotate, the grace period's due time said
    assert [s for s, _ in a.applied()] == [LadderStep.NOTIFY, LadderStep.ANNOTATE]
    assert [e.outcome for e in a.ledger.all_events()][-1] is StepOutcome.PLANNED
    notified = NOW
    b_ = replica(rest, tmp_path, "b", alerts)  # a is gone; b has never seen the episode
    b_.at(3, 4)  # within the grace period: nothing new
    assert b_.applied() == []
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2
    waits = [e for e in b_.ledger.all_events() if e.outcome is StepOutcome.PLANNED]
    assert waits == []  # a already said when the reclaim is due: not said again
    b_.at(5)  # notified + 5m: due
    assert [s for s, _ in b_.applied()] == [LadderStep.RECLAIM]
    (reclaim,) = [e for e in b_.ledger.all_events() if e.step is LadderStep.RECLAIM]
    assert reclaim.at == notified + GRACE
    events = [e for e in kube.objects("Event", "ml") if e["reason"] == "GPUIdleNotified"]
    assert [e["count"] for e in events] == [1]
    patches = _successful_patches(kube)
    assert len([p for p in patches if "spec" in p]) == 1
    record = b_.journal.get(reclaim.episode)
    assert record is not None
    assert [(m.step, m.by) for m in record.steps] == [
        (LadderStep.NOTIFY, "a"),
        (LadderStep.ANNOTATE, "a"),
        (LadderStep.RECLAIM, "b"),
    ]
    assert (record.state.value, record.original_replicas) == ("reclaimed", 2)


def test_a_step_the_old_leader_died_in_is_found_applied(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = replica(rest, tmp_path, "a", [ALERT])
    a.at(0)  # notify

    def killed(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("kill -9")

    # a claims the annotate, patches the Deployment, and dies before it settles.
    monkeypatch.setattr(a.journal, "settle", killed)
    a.at(1)
    record = a.journal.get(a.ledger.all_events()[0].episode)
    assert record is not None
    assert record.inflight is not None
    assert record.inflight.step is LadderStep.ANNOTATE
    flagged = kube.get("Deployment", "train", "ml")["metadata"]["annotations"]
    assert Annotations.FLAGGED_AT in flagged

    b_ = replica(rest, tmp_path, "b", [ALERT])
    b_.at(2)
    assert b_.applied() == [(LadderStep.ANNOTATE, FOUND_APPLIED)]
    assert len([p for p in _successful_patches(kube) if "spec" not in p]) == 1
    record = b_.journal.get(record.episode)
    assert record is not None
    assert record.inflight is None
    assert [m.step for m in record.steps] == [LadderStep.NOTIFY, LadderStep.ANNOTATE]


def test_a_notify_the_old_leader_died_in_is_applied_once(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path
) -> None:
    a = replica(rest, tmp_path, "a", [ALERT])
    kube.fail_next(500, verb="create", path="/events")  # no Event: nothing shows it happened
    kube.fail_next(500, verb="update", path="configmaps/")  # and the settle never lands
    a.at(0)
    b_ = replica(rest, tmp_path, "b", [ALERT])
    b_.at(1)
    assert [s for s, _ in b_.applied()] == [LadderStep.NOTIFY]
    b_.at(2, 3)
    record = b_.journal.episodes()[0]
    notifies = [m for m in record.steps if m.step is LadderStep.NOTIFY]
    assert [(m.by, m.at) for m in notifies] == [("b", NOW + 60)]
    assert [s for s, _ in b_.applied()] == [LadderStep.NOTIFY, LadderStep.ANNOTATE]


def test_a_restore_outside_the_ladder_ends_the_episode(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path
) -> None:
    a = replica(rest, tmp_path, "a", [ALERT])
    a.at(0, 1, 6)
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0
    restored = rfc3339(NOW + 7 * 60)
    cleared = dict.fromkeys((*Annotations.RECLAIM_KEYS, *Annotations.FLAG_KEYS))
    kube.patch(
        "Deployment",
        "train",
        {
            "spec": {"replicas": 2},
            "metadata": {"annotations": {**cleared, Annotations.RESTORED_AT: restored}},
        },
        "ml",
    )
    a.at(8)
    assert a.applied()[-1] == (LadderStep.RESTORE, RESTORED_OUTSIDE)
    (record,) = a.journal.episodes()
    assert (record.state.value, record.ended_at) == ("restored", NOW + 8 * 60)
    assert a.loop.journal is not None
    assert a.loop.journal.view().open_episodes == {}


class Tick:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_leader_whose_renewal_is_older_than_the_deadline_writes_nothing(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path
) -> None:
    """What a SIGSTOP does to a leader, with an injected clock: its last renewal ages past
    the renew deadline while it is paused, and its next write is refused before it is sent."""
    tick = Tick()
    elector = LeaseElector(  # no renewal while the test runs: the pause is the tick
        rest,
        "gpu-guardian",
        "gpu-guardian",
        "a",
        LeaseTiming(renew_deadline=10.0, retry_period=60.0),
        Clocks(monotonic=tick),
    )
    started, stop = threading.Event(), threading.Event()
    thread = threading.Thread(target=elector.run, args=(started.set, lambda: None, stop))
    thread.start()
    try:
        assert started.wait(5)
        a = replica(FencedRest(rest, elector.check), tmp_path, "a", [ALERT])
        a.at(0)  # notify: fine
        assert elector.is_leader()
        tick.now += 11  # paused for 11 s: no renewal in between
        assert not elector.is_leader()
        kube.clear_requests()
        a.loop.run_cycle(NOW + 60)  # forced, as if resumed in the middle of a cycle
        writes = [r for r in kube.requests() if r.verb not in ("get", "list", "watch")]
        assert [r.path for r in writes if "leases" not in r.path] == []
    finally:
        stop.set()
        thread.join(5)
    assert [s for s, _ in a.applied()] == [LadderStep.NOTIFY]
    assert kube.get("Deployment", "train", "ml")["metadata"].get("annotations") is None


def _config(tmp_path: Path, kubeconfig: Path, name: str) -> Path:
    (tmp_path / "rules.yaml").write_text("groups: []\n", encoding="utf-8")
    path = tmp_path / f"{name}.yaml"
    config = {
        "prometheus": {"url": "http://127.0.0.1:9"},
        "rule_files": ["rules.yaml"],
        "state_path": f"{name}.db",
        "remediation": {"enabled": True, "kubeconfig": str(kubeconfig)},
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_status_is_the_same_on_every_replica(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = replica(rest, tmp_path, "a", [ALERT])
    a.at(0, 1, 2)  # notify, annotate, grace
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    answers = []
    for name in ("a", "b"):  # b never acted: its own state database does not even exist
        assert guardian_main(["status", "--config", str(_config(tmp_path, kubeconfig, name)),
                              "--json"]) == 0  # fmt: skip
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    served = build_status(a.ledger, read_episodes(rest, RemediationSettings()))  # /api/v1/status
    assert served.to_json()["pending"] == answers[0]["pending"]
    (pending,) = answers[0]["pending"]
    assert (pending["workload"], pending["next_step"]) == (str(DEPLOY), "reclaim")
    assert pending["due"] == rfc3339(NOW + GRACE)
    assert pending["last"] == f"annotate applied at {rfc3339(NOW + 60)} by a"
    a.at(5)
    assert guardian_main(["status", "--config", str(tmp_path / "b.yaml")]) == 0
    shown = capsys.readouterr().out
    assert "Reclaimed workloads (1):" in shown
    assert "restore: guardian restore ml/Deployment/train" in shown
    assert "original replicas 2" in shown


def test_no_cycle_before_every_rule_group_was_evaluated(
    kube: FakeKubeAPI, rest: KubeRest, tmp_path: Path
) -> None:
    """After a restart with no state, an alert the engine has not evaluated yet has not
    ended: the episode must not be closed by a cycle that runs before it is."""
    a = replica(rest, tmp_path, "a", [ALERT])
    a.at(0, 1)
    evaluated = [False]
    b_ = replica(rest, tmp_path, "b", [])  # the engine has no alert yet...
    b_.loop.ready = lambda: evaluated[0]  # ...because a group has not run since the start
    b_.at(2)
    b_.journal.store.load()
    (record,) = b_.journal.episodes()
    assert record.live
    evaluated[0] = True
    b_.at(3)  # now an alert that is really gone ends the episode
    (record,) = b_.journal.episodes()
    assert (record.state.value, record.ended_at) == ("closed", NOW + 180)
