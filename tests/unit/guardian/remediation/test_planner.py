"""Table-driven tests of the pure planner: one row per rule of the ladder and its guards."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.policies import NOTEBOOK_STOPPED, Annotations, ReclaimPolicy
from guardian.model.reclaim import (
    ActionKind,
    ClusterSnapshot,
    FiringAlert,
    GroupHealth,
    HpaState,
    LedgerEntry,
    LedgerView,
    NamespaceState,
)
from guardian.model.remediation_events import LadderStep, StepOutcome
from guardian.model.times import rfc3339

from .factories import (
    NOW,
    alert,
    enforce,
    healthy,
    pipeline_alert,
    policy,
    ref,
    snapshot,
    workload,
)

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
DRY = PlannerSettings(pipeline_groups=("pipeline",))
EPISODE = workload_episode(ref(), NOW - 7200)


def ledger(
    *steps: tuple[LadderStep, float], outcome: StepOutcome = StepOutcome.APPLIED
) -> LedgerView:
    entries = tuple(
        LedgerEntry(EPISODE, ref(), step, outcome, at, "p", outcome is StepOutcome.DRY_RUN)
        for step, at in steps
    )
    return LedgerView({ref(): (EPISODE, NOW - 7200, "p")}, entries)


NOTIFIED_2H = ledger((LadderStep.NOTIFY, NOW - 7000), (LadderStep.ANNOTATE, NOW - 6900))


@dataclass
class Case:
    id: str
    expect: str  # a LadderStep value, or "wait:<substring of the reason>"
    policies: list[ReclaimPolicy] = field(default_factory=lambda: [enforce()])
    alerts: list[FiringAlert] = field(default_factory=lambda: [alert()])
    snap: ClusterSnapshot | None = None
    view: LedgerView | None = None
    settings: PlannerSettings = REAL
    health: dict[str, GroupHealth] | None = None
    check: Callable[[Any], None] | None = None


def _ns(**annotations: str) -> dict[str, dict[str, Any]]:
    return {"ml": {"annotations": annotations}}


CASES = [
    Case("no policy matches", "wait:no policy matches", policies=[]),
    Case("alert names must match", "wait:no policy", policies=[enforce(alerts={"names": ["X"]})]),
    Case("pending alert starts nothing", "none", alerts=[alert(firing=False)]),
    # GPU use without a request is a policy violation, not waste: guardian_class
    # "violation", which the default matchLabels (guardian_class: reclaimable) never
    # matches, not even for a policy that names the alert.
    Case(
        "unallocated use: a default policy never acts on it",
        "wait:no policy matches",
        alerts=[alert(name="GpuUnallocatedUse", cls="violation")],
    ),
    Case(
        "unallocated use: naming it is not enough without its class",
        "wait:no policy matches",
        policies=[enforce(alerts={"names": ["GpuUnallocatedUse"]})],
        alerts=[alert(name="GpuUnallocatedUse", cls="violation")],
    ),
    Case(
        "a device that cannot be judged (coverage) is never acted on",
        "wait:no policy matches",
        alerts=[alert(name="GpuActivityUnknown", cls="coverage")],
    ),
    Case(
        "a coverage alert on the node does not hold the ladder there, unlike a pipeline alert",
        "notify",
        alerts=[alert(), alert(name="GpuActivityUnknown", cls="coverage", pod="mig-0")],
    ),
    # Memory under-use is right-sizing advice (guardian_class rightsize): a busy GPU with
    # a small model fires it too, so no policy acts on it, whatever it asks for.
    Case(
        "memory advice: a default policy never acts on it",
        "wait:no policy matches",
        alerts=[alert(name="GpuMemoryUnderutilized", cls="rightsize")],
    ),
    Case(
        "memory advice: a policy asking for every class does not act on it either",
        "wait:no policy matches",
        policies=[enforce(alerts={"matchLabels": {}})],
        alerts=[alert(name="GpuMemoryUnderutilized", cls="rightsize")],
    ),
    Case(
        "memory advice from an older rule file, still labelled reclaimable, is not acted on",
        "wait:no policy matches",
        alerts=[alert(name="GpuMemoryUnderutilized")],
    ),
    Case(
        "a policy that asks for violations in matchLabels acts on them",
        "notify",
        policies=[enforce(alerts={"matchLabels": {"guardian_class": "violation"}})],
        alerts=[alert(name="GpuUnallocatedUse", cls="violation")],
    ),
    Case(
        "an idle share of a shared GPU is reclaimable",
        "notify",
        alerts=[alert(name="GpuShareIdle")],
    ),
    Case("first step notifies", "notify"),
    Case(
        "observe mode is a dry run",
        "notify",
        policies=[policy()],
        check=lambda a: (a.dry_run, a.next_step) == (True, LadderStep.RECLAIM) or _fail(a),
    ),
    Case(
        "global dry-run wins over enforce",
        "notify",
        settings=DRY,
        check=lambda a: a.dry_run or _fail(a),
    ),
    Case("then annotates", "annotate", view=ledger((LadderStep.NOTIFY, NOW - 600))),
    Case(
        "then waits out the grace period",
        "wait:grace period: reclaim due at " + rfc3339(NOW - 600 + 3600),
        view=ledger((LadderStep.NOTIFY, NOW - 600), (LadderStep.ANNOTATE, NOW - 300)),
    ),
    Case("then reclaims", "reclaim", view=NOTIFIED_2H),
    Case(
        "a dry-run notification does not count once enforcing",
        "notify",
        view=ledger((LadderStep.NOTIFY, NOW - 7000), outcome=StepOutcome.DRY_RUN),
    ),
    Case(
        "dry-run steps advance a dry-run ladder",
        "reclaim",
        settings=DRY,
        view=ledger(
            (LadderStep.NOTIFY, NOW - 7000),
            (LadderStep.ANNOTATE, NOW - 6000),
            outcome=StepOutcome.DRY_RUN,
        ),
        check=lambda a: a.dry_run or _fail(a),
    ),
    Case(
        "a dry-run reclaim is planned once per episode",
        "wait:reclaim already done (or planned in dry-run)",
        settings=DRY,
        view=ledger(
            (LadderStep.NOTIFY, NOW - 7000),
            (LadderStep.ANNOTATE, NOW - 6000),
            (LadderStep.RECLAIM, NOW - 60),
            outcome=StepOutcome.DRY_RUN,
        ),
    ),
    Case(
        "one step per cycle",
        "wait:one ladder step per cycle",
        view=ledger((LadderStep.NOTIFY, NOW)),
    ),
    Case(
        "an annotation found on the object counts (crash before the ledger write)",
        "reclaim",
        view=ledger((LadderStep.NOTIFY, NOW - 7000)),
        snap=snapshot(
            workload(
                annotations={
                    Annotations.EPISODE: EPISODE,
                    Annotations.FLAGGED_AT: rfc3339(NOW - 6000),
                }
            )
        ),
    ),
    Case(
        "ladder without reclaim stops",
        "wait:ends before reclaim",
        policies=[enforce(ladder={"reclaim": False})],
        view=NOTIFIED_2H,
    ),
    # -- exclusions
    Case(
        "kube-system is excluded",
        "wait:kube-system is always excluded",
        alerts=[alert(namespace="kube-system")],
        snap=snapshot(
            workload(ref(namespace="kube-system")),
            pods={("kube-system", "web-1"): ref(namespace="kube-system")},
        ),
    ),
    Case(
        "the controller's namespace is excluded",
        "wait:the controller's own",
        alerts=[alert(namespace="gpu-guardian")],
        snap=snapshot(
            workload(ref(namespace="gpu-guardian")),
            pods={("gpu-guardian", "web-1"): ref(namespace="gpu-guardian")},
        ),
    ),
    Case(
        "exclude annotation",
        "wait:exclude=true",
        snap=snapshot(workload(annotations={Annotations.EXCLUDE: "true"})),
    ),
    Case(
        "exclude-until in the future",
        "wait:excluded until",
        snap=snapshot(workload(annotations={Annotations.EXCLUDE_UNTIL: rfc3339(NOW + 60)})),
    ),
    Case(
        "exclude-until in the past",
        "notify",
        snap=snapshot(workload(annotations={Annotations.EXCLUDE_UNTIL: rfc3339(NOW - 60)})),
    ),
    Case(
        "unreadable exclude-until still excludes",
        "wait:unreadable",
        snap=snapshot(workload(annotations={Annotations.EXCLUDE_UNTIL: "tomorrow"})),
    ),
    Case(
        "namespace exclude annotation",
        "wait:namespace ml has",
        snap=snapshot(workload(), namespaces=_ns(**{Annotations.EXCLUDE: "true"})),
    ),
    Case(
        "snoozed workload",
        "wait:snoozed until",
        snap=snapshot(workload(annotations={Annotations.SNOOZE_UNTIL: rfc3339(NOW + 600)})),
    ),
    Case(
        "snoozed namespace",
        "wait:snoozed until",
        snap=snapshot(workload(), namespaces=_ns(**{Annotations.SNOOZE_UNTIL: rfc3339(NOW + 1)})),
    ),
    Case(
        "policy exclusions",
        "wait:policy p excludes namespace ml",
        policies=[enforce(exclusions={"namespaces": ["ml"]})],
    ),
    Case(
        "namespace not readable",
        "wait:could not be read",
        snap=ClusterSnapshot({ref(): workload()}, {}, snapshot().pod_owners),
    ),
    Case(
        "kill switch setting",
        "wait:kill switch",
        settings=PlannerSettings(dry_run=False, kill_switch=True, pipeline_groups=("pipeline",)),
    ),
    Case(
        "kill switch annotation",
        "wait:kill switch",
        snap=snapshot(
            workload(),
            namespaces={"gpu-guardian": {"annotations": {Annotations.KILL_SWITCH: "true"}}},
        ),
    ),
    # -- missing data is not idleness
    Case(
        "stale exporter on the node",
        "wait:GpuExporterStale is firing for node n1",
        alerts=[alert(), pipeline_alert()],
        view=NOTIFIED_2H,
    ),
    Case(
        "stale exporter on another node",
        "reclaim",
        alerts=[alert(), pipeline_alert(node="n2")],
        view=NOTIFIED_2H,
    ),
    Case(
        "exporter down without node blocks the cluster",
        "wait:for its cluster",
        alerts=[alert(), pipeline_alert("GpuExporterDown", node=None)],
    ),
    Case(
        "pending gap alert blocks too",
        "wait:GpuMetricsGap is pending",
        alerts=[
            alert(),
            _pending := FiringAlert(
                pipeline_alert("GpuMetricsGap").labels, NOW, False, group="pipeline"
            ),
        ],
    ),
    Case(
        "failed evaluation of the alert's group",
        "wait:rule group idle: timeout",
        health={
            "idle": GroupHealth("idle", NOW, False, "timeout"),
            "pipeline": GroupHealth("pipeline", NOW, True),
        },
    ),
    Case(
        "partial pipeline evaluation",
        "wait:rule group pipeline: partial",
        health={
            "idle": GroupHealth("idle", NOW, True),
            "pipeline": GroupHealth("pipeline", NOW, False, "partial"),
        },
    ),
    Case(
        "pipeline never evaluated",
        "wait:has not been evaluated",
        health={"idle": GroupHealth("idle", NOW, True)},
    ),
    Case(
        "stale evaluation",
        "wait:last evaluated 900s ago",
        health={
            "idle": GroupHealth("idle", NOW - 900, True),
            "pipeline": GroupHealth("pipeline", NOW, True),
        },
    ),
    # -- warm-up
    Case(
        "young workload warms up",
        "wait:warming up: created",
        snap=snapshot(workload(created_at=NOW - 300)),
    ),
    Case(
        "restored workload warms up again",
        "wait:warming up: restored",
        snap=snapshot(workload(annotations={Annotations.RESTORED_AT: rfc3339(NOW - 60)})),
    ),
    # -- what can be reclaimed
    Case(
        "HPA refused by default",
        "wait:HorizontalPodAutoscaler hpa-web",
        view=NOTIFIED_2H,
        snap=snapshot(workload(hpa=HpaState("hpa-web", 2, 5))),
    ),
    Case(
        "HPA recorded when the policy says so",
        "reclaim",
        policies=[enforce(hpa="record")],
        view=NOTIFIED_2H,
        snap=snapshot(workload(hpa=HpaState("hpa-web", 2, 5))),
        check=lambda a: a.hpa_record or _fail(a),
    ),
    Case(
        "bare pod: annotate and notify only",
        "wait:bare pod",
        view=NOTIFIED_2H,
        snap=snapshot(workload(action=ActionKind.POD, replicas=None)),
    ),
    Case(
        "bare pod deleted when allowed",
        "reclaim",
        view=NOTIFIED_2H,
        policies=[enforce(allowPodDeletion=True)],
        snap=snapshot(workload(action=ActionKind.POD, replicas=None)),
        check=lambda a: a.delete_pod or _fail(a),
    ),
    Case(
        "unstoppable owner",
        "wait:no replica count",
        view=NOTIFIED_2H,
        snap=snapshot(workload(action=ActionKind.NONE, replicas=None)),
    ),
    Case(
        "already at zero",
        "wait:already at 0",
        view=NOTIFIED_2H,
        snap=snapshot(workload(replicas=0)),
    ),
    Case(
        "notebook already stopped",
        "wait:notebook already stopped",
        view=NOTIFIED_2H,
        snap=snapshot(
            workload(
                action=ActionKind.NOTEBOOK,
                replicas=None,
                suspended=True,
                annotations={NOTEBOOK_STOPPED: "x"},
            )
        ),
    ),
    Case(
        "per-namespace hourly limit",
        "wait:1 reclaims per hour in namespace ml",
        policies=[enforce(limits={"perNamespacePerHour": 1})],
        view=LedgerView(
            NOTIFIED_2H.open_episodes,
            (
                *NOTIFIED_2H.entries,
                LedgerEntry(
                    "other",
                    ref("old"),
                    LadderStep.RECLAIM,
                    StepOutcome.APPLIED,
                    NOW - 1800,
                    "p",
                    False,
                ),
            ),
        ),
    ),
    Case(
        "already reclaimed waits for a restore",
        "wait:already reclaimed",
        snap=snapshot(workload(replicas=0, annotations={Annotations.RECLAIMED_AT: "x"})),
    ),
    Case(
        "exclude on a reclaimed workload restores it",
        "restore",
        alerts=[],
        snap=snapshot(
            workload(
                replicas=0,
                annotations={
                    Annotations.RECLAIMED_AT: rfc3339(NOW - 60),
                    Annotations.EXCLUDE: "true",
                },
            )
        ),
    ),
    Case(
        "a reclaimed workload scaled up by hand gets its marks cleared",
        "restore",
        alerts=[],
        snap=snapshot(
            workload(replicas=3, annotations={Annotations.RECLAIMED_AT: rfc3339(NOW - 60)})
        ),
        check=lambda a: "scaled to 3 by hand" in a.reason or _fail(a),
    ),
    Case(
        "a workload that could not be read is not acted on",
        "wait:could not read the workload: 403",
        snap=ClusterSnapshot(
            {},
            {"ml": NamespaceState("ml")},
            snapshot().pod_owners,
            errors=(f"{ref()}: 403 Forbidden",),
        ),
    ),
    Case(
        "restore is dry-run in global dry-run",
        "restore",
        alerts=[],
        settings=DRY,
        snap=snapshot(
            workload(
                replicas=0,
                annotations={
                    Annotations.RECLAIMED_AT: rfc3339(NOW - 60),
                    Annotations.EXCLUDE: "true",
                },
            )
        ),
        check=lambda a: a.dry_run or _fail(a),
    ),
]


def _fail(action: Any) -> bool:
    raise AssertionError(f"unexpected action {action}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_planner_table(case: Case) -> None:
    result = plan(
        Cycle(
            case.alerts,
            case.snap or snapshot(),
            case.view or LedgerView(),
            NOW,
            health=case.health if case.health is not None else healthy(),
        ),
        case.policies,
        case.settings,
    )
    if case.expect == "none":
        assert not result.actions
        assert not [w for w in result.waits if w.workload is not None]
        return
    if case.expect.startswith("wait:"):
        assert not result.actions, result.actions
        reasons = [w.reason for w in result.waits]
        assert any(case.expect[5:] in r for r in reasons), reasons
        return
    assert [a.step.value for a in result.actions] == [case.expect], result.waits
    if case.check is not None:
        case.check(result.actions[0])


@pytest.mark.parametrize("settings", [REAL, DRY], ids=["enforcing", "dry run"])
def test_memory_advice_alone_never_starts_any_step(settings: PlannerSettings) -> None:
    # The case of issue 34: an inference server at 95 % SM with a small model fires only
    # GpuMemoryUnderutilized. A short-form enforcing policy (no alerts.names) must plan
    # nothing for it, at any point of a ladder: fresh, or past its grace period.
    memory = alert(name="GpuMemoryUnderutilized", cls="rightsize", severity="info")
    for view in (LedgerView(), NOTIFIED_2H):
        result = plan(
            Cycle([memory], snapshot(), view, NOW, health=healthy()), [enforce()], settings
        )
        assert result.actions == (), result.actions
        assert [w.reason for w in result.waits] == ["no policy matches"]
    # The same workload idle as a whole is reclaimed: only the advice is left alone.
    idle = plan(
        Cycle([memory, alert()], snapshot(), NOTIFIED_2H, NOW, health=healthy()), [enforce()], REAL
    )
    assert [(a.step, a.alert_labels["alertname"]) for a in idle.actions] == [
        (LadderStep.RECLAIM, "GpuIdle")
    ]


def test_shared_root_gets_one_action() -> None:
    snap = snapshot(pods={("ml", "web-1"): ref(), ("ml", "web-2"): ref()})
    result = plan(
        Cycle(
            [alert("web-1"), alert("web-2", active_at=NOW - 9000)],
            snap,
            LedgerView(),
            NOW,
            health=healthy(),
        ),
        [enforce()],
        REAL,
    )
    assert len(result.actions) == 1
    # the episode starts with the earliest alert of the workload
    assert result.actions[0].episode == workload_episode(ref(), NOW - 9000)
    assert result.actions[0].alert_labels["pod"] == "web-2"


def test_per_cycle_limits() -> None:
    a, b = ref("a"), ref("b")
    snap = snapshot(workload(a), workload(b), pods={("ml", "a-1"): a, ("ml", "b-1"): b})
    entries = []
    opened = {}
    for r, started in ((a, NOW - 7200), (b, NOW - 7100)):
        ep = workload_episode(r, started)
        opened[r] = (ep, started, "p")
        entries += [
            LedgerEntry(ep, r, LadderStep.NOTIFY, StepOutcome.APPLIED, NOW - 7000, "p", False)
        ]
    view = LedgerView(opened, tuple(entries))
    alerts = [alert("a-1"), alert("b-1", active_at=NOW - 7100)]
    pol = enforce(ladder={"annotate": False, "gracePeriod": "1h"}, limits={"perCycle": 1})
    result = plan(Cycle(alerts, snap, view, NOW, health=healthy()), [pol], REAL)
    assert [(x.workload.name, x.step) for x in result.actions] == [("a", LadderStep.RECLAIM)]
    assert any("1 reclaims per cycle" in w.reason for w in result.waits)
    glob = PlannerSettings(dry_run=False, max_actions_per_cycle=0, pipeline_groups=("pipeline",))
    result = plan(
        Cycle(alerts, snap, view, NOW, health=healthy()),
        [enforce(ladder={"annotate": False})],
        glob,
    )
    assert not result.actions


def test_precedence_priority_then_specificity_then_name() -> None:
    low = enforce("low", priority=1)
    high = enforce("high", priority=5, mode="observe")
    result = plan(
        Cycle([alert()], snapshot(), LedgerView(), NOW, health=healthy()), [low, high], REAL
    )
    assert result.actions[0].policy == "high"
    assert result.actions[0].dry_run
    broad = enforce("broad")
    narrow = enforce("narrow", scope={"namespaces": ["ml"], "kinds": ["Deployment"]})
    result = plan(
        Cycle([alert()], snapshot(), LedgerView(), NOW, health=healthy()), [broad, narrow], REAL
    )
    assert result.actions[0].policy == "narrow"
    result = plan(
        Cycle([alert()], snapshot(), LedgerView(), NOW, health=healthy()),
        [enforce("b"), enforce("a")],
        REAL,
    )
    assert result.actions[0].policy == "a"


def test_scope_selectors_and_kinds() -> None:
    snap = snapshot(
        workload(labels={"team": "vision"}), namespaces={"ml": {"labels": {"tier": "research"}}}
    )

    def steps(**scope: Any) -> list[str]:
        result = plan(
            Cycle([alert()], snap, LedgerView(), NOW, health=healthy()),
            [enforce(scope=scope)],
            REAL,
        )
        return [a.step.value for a in result.actions]

    assert steps(namespaceSelector={"matchLabels": {"tier": "research"}}) == ["notify"]
    assert steps(namespaceSelector={"matchLabels": {"tier": "prod"}}) == []
    assert steps(
        workloadSelector={
            "matchExpressions": [{"key": "team", "operator": "In", "values": ["vision"]}]
        }
    ) == ["notify"]
    assert (
        steps(workloadSelector={"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})
        == []
    )
    assert steps(kinds=["StatefulSet"]) == []
    assert steps(namespaces=["other"]) == []


def test_episode_closes_when_alerts_end() -> None:
    result = plan(
        Cycle([], snapshot(), ledger((LadderStep.NOTIFY, NOW - 600)), NOW, health=healthy()),
        [enforce()],
        REAL,
    )
    assert result.closed_episodes == ((ref(), EPISODE),)
    reclaimed = snapshot(workload(replicas=0, annotations={Annotations.RECLAIMED_AT: "x"}))
    result = plan(Cycle([], reclaimed, NOTIFIED_2H, NOW, health=healthy()), [enforce()], REAL)
    assert result.closed_episodes == ()


@pytest.mark.parametrize(
    ("health", "gap", "why"),
    [
        (
            {**healthy(), "idle": GroupHealth("idle", NOW - 30, False, "connection refused")},
            "",
            "rule group idle: connection refused",
        ),
        (
            {**healthy(), "idle": GroupHealth("idle", NOW - 900, True)},
            "",
            "rule group idle last evaluated 900s ago",
        ),
        ({}, "", "rule group pipeline has not been evaluated yet"),
        (healthy(), "cannot tell which clusters the source serves (timeout)", "(timeout)"),
    ],
    ids=["evaluation failed", "evaluation stale", "never evaluated", "cluster scope unknown"],
)
def test_an_outage_holds_the_episode_instead_of_closing_it(
    health: dict[str, GroupHealth], gap: str, why: str
) -> None:
    # Prometheus down mid-grace: no alerts come, and that is not their end.
    result = plan(
        Cycle([], snapshot(), NOTIFIED_2H, NOW, health=health, evidence_gap=gap), [enforce()], REAL
    )
    assert result.closed_episodes == ()
    (held,) = [w for w in result.waits if w.workload == ref()]
    assert held.episode == EPISODE
    assert held.reason.startswith("its alerts cannot be seen now: ")
    assert why in held.reason
    assert not held.refused
    # Once the evaluations are healthy again and the alerts are still gone, it closes.
    after = plan(Cycle([], snapshot(), NOTIFIED_2H, NOW, health=healthy()), [enforce()], REAL)
    assert after.closed_episodes == ((ref(), EPISODE),)


def test_an_outage_never_holds_the_episode_of_a_deleted_workload() -> None:
    gone = ClusterSnapshot({}, {"ml": NamespaceState("ml")}, {})
    failed = {**healthy(), "idle": GroupHealth("idle", NOW - 30, False, "down")}
    result = plan(Cycle([], gone, NOTIFIED_2H, NOW, health=failed), [enforce()], REAL)
    assert result.closed_episodes == ((ref(), EPISODE),)


def test_deleted_workload_ends_its_episode_unreadable_keeps_it() -> None:
    gone = ClusterSnapshot({}, {"ml": NamespaceState("ml")}, {})
    result = plan(Cycle([], gone, NOTIFIED_2H, NOW, health=healthy()), [enforce()], REAL)
    assert result.closed_episodes == ((ref(), EPISODE),)
    unreadable = ClusterSnapshot({}, {}, {}, errors=(f"{ref()}: timeout",))
    result = plan(Cycle([], unreadable, NOTIFIED_2H, NOW, health=healthy()), [enforce()], REAL)
    assert result.closed_episodes == ()


def test_pod_without_owner_waits_with_reason() -> None:
    snap = snapshot(pods={("ml", "web-1"): None})
    result = plan(Cycle([alert()], snap, LedgerView(), NOW, health=healthy()), [enforce()], REAL)
    assert not result.actions
    assert "pod ml/web-1: not found" in result.waits[0].reason
    result = plan(
        Cycle([alert(pod="")], snap, LedgerView(), NOW, health=healthy()), [enforce()], REAL
    )
    assert "no namespace/pod labels" in result.waits[0].reason


def test_ns_state_type() -> None:
    assert NamespaceState("x").annotations == {}
