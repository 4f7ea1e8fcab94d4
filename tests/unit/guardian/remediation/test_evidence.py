"""Whole-workload evidence: a root is reclaimed only when the alerts cover every GPU of
every pod it owns now. One table of real shapes, then every mix of pod states."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.evidence import coverage, is_gpu_resource
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.reclaim import (
    ActionKind,
    FiringAlert,
    LedgerEntry,
    LedgerView,
    MemberPod,
    Plan,
    WorkloadState,
)
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef

from .factories import NOW, alert, enforce, healthy, member, ref, snapshot, workload

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
ACTIVE = NOW - 7200  # the alerts began two hours ago; the grace period (1h) is over


def _view(r: WorkloadRef) -> LedgerView:
    episode = workload_episode(r, ACTIVE)
    notified = LedgerEntry(
        episode, r, LadderStep.NOTIFY, StepOutcome.APPLIED, NOW - 7000, "p", False
    )
    flagged = LedgerEntry(
        episode, r, LadderStep.ANNOTATE, StepOutcome.APPLIED, NOW - 6900, "p", False
    )
    return LedgerView({r: (episode, ACTIVE, "p")}, (notified, flagged))


def idle(pod: str, uuid: str = "", **labels: str) -> FiringAlert:
    extra = {"uuid": uuid} if uuid else {}
    return alert(pod, active_at=ACTIVE, **extra, **labels)


def _plan(ws: WorkloadState, alerts: list[FiringAlert]) -> Plan:
    pods = {("ml", a.labels["pod"]): ws.ref for a in alerts}
    return plan(
        Cycle(
            alerts,
            snapshot(ws, pods=pods or {("ml", "x"): ws.ref}),
            _view(ws.ref),
            NOW,
            health=healthy(),
        ),
        [enforce()],
        REAL,
    )


def _outcome(result: Plan, r: WorkloadRef) -> str:
    steps = [a.step.value for a in result.actions if a.workload == r]
    if steps:
        return steps[0]
    reasons = [w.reason for w in result.waits if w.workload == r]
    return "wait: " + " | ".join(reasons)


def _deploy(*members: MemberPod, replicas: int | None = None, kind: str = "Deployment"):
    action = {
        "Deployment": ActionKind.SCALE,
        "StatefulSet": ActionKind.SCALE,
        "Job": ActionKind.SUSPEND,
        "CronJob": ActionKind.SUSPEND,
        "Pod": ActionKind.POD,
        "Notebook": ActionKind.NOTEBOOK,
    }[kind]
    counted = action is ActionKind.SCALE
    return workload(
        ref("web", kind=kind),
        action=action,
        replicas=(replicas if replicas is not None else len(members)) if counted else None,
        members=members,
    )


EIGHT = [f"GPU-{i}" for i in range(8)]


@dataclass(frozen=True)
class Shape:
    id: str
    ws: WorkloadState
    alerts: list[FiringAlert]
    expect: str  # "reclaim", or a substring of the wait's reason


SHAPES = [
    Shape("1 replica idle", _deploy(member("web-1")), [idle("web-1")], "reclaim"),
    Shape(
        "2 replicas both idle",
        _deploy(member("web-1"), member("web-2")),
        [idle("web-1"), idle("web-2")],
        "reclaim",
    ),
    Shape(
        "2 replicas, one busy (the reported failure: 2 -> 0 killed the busy one)",
        _deploy(member("web-1"), member("web-2")),
        [idle("web-1")],
        "partly idle, not reclaimed (1 of 2 pods idle; idle: web-1 (GPU idle); "
        "not idle: web-2 (busy or unknown: no idle alert))",
    ),
    Shape(
        "3 replicas, one idle",
        _deploy(member("web-1"), member("web-2"), member("web-3")),
        [idle("web-2")],
        "1 of 3 pods idle",
    ),
    Shape(
        "3 replicas, one busy",
        _deploy(member("web-1"), member("web-2"), member("web-3")),
        [idle("web-1"), idle("web-3")],
        "not idle: web-2 (busy or unknown: no idle alert)",
    ),
    Shape(
        "one pod with 8 GPUs, 7 idle and 1 busy",
        _deploy(member("web-1", gpus=8)),
        [idle("web-1", u) for u in EIGHT[:7]],
        "partly idle, not reclaimed (0 of 1 pod idle; not idle: web-1 (7 of its 8 GPUs idle))",
    ),
    Shape(
        "one pod with 8 GPUs, all idle",
        _deploy(member("web-1", gpus=8)),
        [idle("web-1", u) for u in EIGHT],
        "reclaim",
    ),
    Shape(
        "two alerts about the same GPU cover one GPU",
        _deploy(member("web-1", gpus=2)),
        [idle("web-1", "GPU-0"), idle("web-1", "GPU-0", alertname="GpuShareIdle")],
        "1 of its 2 GPUs idle",
    ),
    Shape(
        "dcgm-exporter's UUID label tells GPUs apart",
        _deploy(member("web-1", gpus=2)),
        [idle("web-1", UUID="GPU-0"), idle("web-1", UUID="GPU-1")],
        "reclaim",
    ),
    Shape(
        "Job with parallelism 2, one pod busy",
        _deploy(member("web-1"), member("web-2"), kind="Job"),
        [idle("web-1")],
        "1 of 2 pods idle",
    ),
    Shape(
        "Job whose finished pods hold nothing",
        _deploy(member("web-1"), member("web-0", phase="Succeeded"), kind="Job"),
        [idle("web-1")],
        "reclaim",
    ),
    Shape(
        "scaled 1 -> 2 during the grace period, the new replica busy",
        _deploy(member("web-1"), member("web-2", created_at=NOW - 600)),
        [idle("web-1")],
        "web-2 (busy or unknown: no idle alert)",
    ),
    Shape(
        "a replica asked for but not created (quota): nothing of it runs",
        _deploy(member("web-1"), replicas=2),
        [idle("web-1")],
        "reclaim",
    ),
    Shape(
        "no pod of the root holds a GPU any more",
        _deploy(member("web-0", phase="Succeeded"), kind="Job"),
        [idle("web-0")],
        "none of its pods holds a GPU the alerts are about",
    ),
    Shape(
        "a Pending replica is waiting, not idle",
        _deploy(member("web-1"), member("web-2", phase="Pending")),
        [idle("web-1")],
        "web-2 (Pending)",
    ),
    Shape(
        "a terminating replica",
        _deploy(member("web-1"), member("web-2", deleting=True)),
        [idle("web-1"), idle("web-2")],
        "web-2 (terminating)",
    ),
    Shape(
        "a pod recreated with the same name after its alert began",
        _deploy(member("web-1", created_at=ACTIVE + 60)),
        [idle("web-1")],
        "web-1 (created",
    ),
    Shape(
        "a CPU-only pod of the root holds no GPU",
        _deploy(member("web-1"), member("web-cpu", gpus=0)),
        [idle("web-1")],
        "reclaim",
    ),
    Shape(
        "a MIG slice",
        _deploy(member("web-1", resource="nvidia.com/mig-1g.10gb")),
        [idle("web-1", "MIG-abc")],
        "reclaim",
    ),
    Shape(
        "StatefulSet, highest ordinal idle only",
        _deploy(member("web-0"), member("web-1"), kind="StatefulSet"),
        [idle("web-1")],
        "1 of 2 pods idle",
    ),
    Shape(
        "a Notebook",
        _deploy(member("web-0"), kind="Notebook"),
        [idle("web-0")],
        "reclaim",
    ),
    Shape(
        "pods that could not be read",
        workload(ref("web"), members=None),
        [idle("web-1")],
        "the workload's pods could not be read",
    ),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_a_root_is_reclaimed_only_when_the_evidence_covers_all_of_it(shape: Shape) -> None:
    ws = shape.ws
    if ws.members is None:  # the factory snapshot fills in members it is not given
        got = coverage(ws, shape.alerts, NOW).reason()
        assert shape.expect in got
        return
    got = _outcome(_plan(ws, shape.alerts), ws.ref)
    if shape.expect == "reclaim":
        assert got == "reclaim"
    else:
        assert got.startswith("wait: "), got
        assert shape.expect in got


def test_an_alert_the_policy_does_not_act_on_is_no_evidence() -> None:
    ws = _deploy(member("web-1"), member("web-2"))
    alerts = [idle("web-1"), idle("web-2", alertname="GpuMemoryUnderutilized")]
    result = plan(
        Cycle(
            alerts,
            snapshot(ws, pods={("ml", "web-1"): ws.ref, ("ml", "web-2"): ws.ref}),
            _view(ws.ref),
            NOW,
            health=healthy(),
        ),
        [enforce(alerts={"names": ["GpuIdle"]})],
        REAL,
    )
    assert "web-2 (busy or unknown: no idle alert)" in _outcome(result, ws.ref)


def test_the_reclaim_reason_says_how_much_was_covered() -> None:
    ws = _deploy(member("web-1"), member("web-2"))
    result = _plan(ws, [idle("web-1"), idle("web-2")])
    (action,) = result.actions
    assert action.step is LadderStep.RECLAIM
    assert "all 2 pods idle" in action.reason


@pytest.mark.parametrize(
    ("members", "alerts", "partial"),
    [
        ((member("web-1"), member("web-2")), [idle("web-1")], True),
        ((member("web-1", gpus=8),), [idle("web-1", "GPU-0")], True),
        ((member("web-1"), member("web-2")), [], False),  # nothing idle: not partly
        ((member("web-1"),), [idle("web-1")], False),  # all idle: whole, not partly
    ],
)
def test_partly_idle_is_some_idle_part_not_all(
    members: tuple[MemberPod, ...], alerts: list[FiringAlert], partial: bool
) -> None:
    assert coverage(_deploy(*members), alerts, NOW).partial is partial


WINDOW = 1920.0  # GpuIdle's: 30m of 2m rates
RECENT = NOW - 600  # an alert that began ten minutes ago


def windowed(pod: str, active_at: float = ACTIVE, window: float = WINDOW, **labels: str):
    plain = idle(pod, **labels)
    return FiringAlert(plain.labels, active_at, True, plain.group, window=window)


@pytest.mark.parametrize(
    ("pod", "alert", "idle_"),
    [
        # Older than the alert and than its whole window: evidence about it.
        (member("web-1", created_at=ACTIVE - WINDOW), windowed("web-1"), True),
        # Recreated under the same name after the alert began (issue #28's shape).
        (member("web-1", created_at=ACTIVE + 60), windowed("web-1"), False),
        # Created before a recent alert, but inside the window it looks back over: the
        # window's start may be an earlier pod of that name (no pod_uid to tell).
        (member("web-1", created_at=RECENT - 300), windowed("web-1", RECENT), False),
        # ... and once the window no longer reaches before it, it is all about this pod.
        (member("web-1", created_at=NOW - WINDOW - 1), windowed("web-1", RECENT), True),
        # With pod_uid the series are this pod's own: the window does not matter.
        (
            member("web-1", created_at=RECENT - 300),
            windowed("web-1", RECENT, pod_uid="uid-web-1"),
            True,
        ),
        (member("web-1"), windowed("web-1", pod_uid="uid-other"), False),
        # No window known (an external alert source): only "older than the alert".
        (member("web-1", created_at=RECENT - 300), windowed("web-1", RECENT, 0.0), True),
    ],
    ids=["old", "after-alert", "inside-window", "after-window", "uid", "other-uid", "no-window"],
)
def test_evidence_is_about_this_pod_only_when_it_can_be(
    pod: MemberPod, alert: FiringAlert, idle_: bool
) -> None:
    got = coverage(_deploy(pod), [alert], NOW)
    assert got.whole is idle_, got.reason()


def test_the_reason_says_why_an_alert_is_about_another_pod() -> None:
    young = member("web-1", created_at=RECENT - 300)
    assert "inside the 32m its alerts look back over" in (
        coverage(_deploy(young), [windowed("web-1", RECENT)], NOW).reason()
    )
    other = coverage(_deploy(member("web-1")), [windowed("web-1", pod_uid="u2")], NOW)
    assert "its alerts are about pod UID u2" in other.reason()


def test_partial_idleness_still_notifies_but_never_acts() -> None:
    # The first steps (notify, annotate) say what is idle; only the reclaim needs it all.
    ws = _deploy(member("web-1"), member("web-2"))
    result = plan(
        Cycle(
            [idle("web-1")],
            snapshot(ws, pods={("ml", "web-1"): ws.ref}),
            LedgerView(),
            NOW,
            health=healthy(),
        ),
        [enforce()],
        REAL,
    )
    assert [a.step for a in result.actions] == [LadderStep.NOTIFY]


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu.shared", True),
        ("nvidia.com/mig-3g.40gb", True),
        ("amd.com/gpu", True),
        ("gpu.intel.com/i915", True),
        ("rdma/hca_shared_devices_a", False),
        ("example.com/fpga", False),
        ("cpu", False),
        ("kubernetes.io/gpu-like", False),
    ],
)
def test_which_extended_resources_are_gpus(name: str, gpu: bool) -> None:
    assert is_gpu_resource(name) is gpu


# ---------------------------------------------------------------- every mix of parts
# Each pod of a root is one of these; only a root whose every part is idle is reclaimed.
PARTS = {
    "idle": (member, {}, True),
    "busy": (member, {"alert": False}, False),
    "new": (member, {"created_at": ACTIVE + 1}, False),
    "pending": (member, {"phase": "Pending"}, False),
    "terminating": (member, {"deleting": True}, False),
    "half": (member, {"gpus": 2}, False),  # 2 GPUs, one alert
}


def _mix(kind: str, parts: tuple[str, ...]) -> tuple[WorkloadState, list[FiringAlert]]:
    members, alerts = [], []
    for i, part in enumerate(parts):
        make, options, _idle = PARTS[part]
        name = f"web-{i}"
        kwargs = {k: v for k, v in options.items() if k != "alert"}
        members.append(make(name, **kwargs))
        if options.get("alert", True):
            alerts.append(idle(name, f"GPU-{i}"))
    return _deploy(*members, kind=kind), alerts


MIXES = [
    (kind, parts)
    for kind in ("Deployment", "StatefulSet", "Job", "Pod")
    for n in (1, 2, 3)
    for parts in itertools.product(PARTS, repeat=n)
    if kind != "Pod" or n == 1
]


@pytest.mark.parametrize(("kind", "parts"), MIXES, ids=lambda v: str(v))
def test_any_mix_of_busy_unknown_new_and_idle_parts(kind: str, parts: tuple[str, ...]) -> None:
    ws, alerts = _mix(kind, parts)
    if kind == "Pod":
        ws = workload(ws.ref, action=ActionKind.POD, replicas=None, members=ws.members)
    policies = [enforce(allowPodDeletion=True)] if kind == "Pod" else [enforce()]
    pods = {("ml", a.labels["pod"]): ws.ref for a in alerts} or {("ml", "x"): ws.ref}
    cycle = Cycle(alerts, snapshot(ws, pods=pods), _view(ws.ref), NOW, health=healthy())
    result = plan(cycle, policies, REAL)
    everything_idle = all(PARTS[p][2] for p in parts)
    reclaimed = any(a.step is LadderStep.RECLAIM for a in result.actions)
    assert reclaimed is everything_idle, _outcome(result, ws.ref)
    if not everything_idle and alerts:
        assert any(w.workload == ws.ref and "not reclaimed" in w.reason for w in result.waits)
