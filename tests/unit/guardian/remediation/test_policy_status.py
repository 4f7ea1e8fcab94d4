"""A policy object's status from a plan, and which generation is in force."""

from __future__ import annotations

from typing import Any

from guardian.app.remediation.pending_pods import pending_pod
from guardian.app.remediation.policy_objects import PolicyObjects
from guardian.engine.remediation.policy_status import ObjectView, build_status
from guardian.model.labels import LabelSet
from guardian.model.reclaim import Plan, PlannedAction, Wait
from guardian.model.remediation_events import HoldKind, LadderStep

from .factories import NOW, ref, snapshot


def _plan() -> Plan:
    action = PlannedAction(
        ref(),
        LadderStep.ANNOTATE,
        "fleet",
        "ep",
        "GpuIdle firing",
        True,
        LabelSet(),
        LadderStep.RECLAIM,
        NOW + 600,
    )
    other = Wait(
        ref("b"),
        "grace period",
        "fleet",
        "ep2",
        LabelSet(),
        False,
        LadderStep.RECLAIM,
        NOW + 60,
        kind=HoldKind.GRACE,
    )
    return Plan(NOW, (action,), (other,))


def test_status_previews_the_ladder() -> None:
    status = build_status(ObjectView("fleet", 2, 2), _plan(), snapshot(), {})
    assert status["observedGeneration"] == 2
    assert status["matchedWorkloads"] == 2
    assert status["pendingSteps"] == 2
    assert status["lastAction"] == "would annotate ml/Deployment/web"
    actions = [(c["workload"], c["action"], c["at"]) for c in status["candidates"]]
    assert actions == [
        ("ml/Deployment/web", "would annotate", "2023-11-16T02:00:00Z"),
        ("ml/Deployment/web", "would reclaim", "2023-11-16T02:10:00Z"),
        ("ml/Deployment/b", "next: reclaim", "2023-11-16T02:01:00Z"),
    ]
    ready, invalid = status["conditions"]
    assert (ready["type"], ready["status"], invalid["status"]) == ("Ready", "True", "False")


def test_an_invalid_generation_keeps_the_one_in_force() -> None:
    view = ObjectView("fleet", 3, 2, invalid=[("spec.activeWindows[0]", "unknown timezone")])
    previous = {
        "lastAction": "annotate ml/Deployment/web",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2023-11-16T01:00:00Z"}
        ],
    }
    status = build_status(view, _plan(), snapshot(), previous)
    ready, invalid = status["conditions"]
    assert ready["status"] == "False"
    assert ready["message"] == (
        "generation 3 is invalid (spec.activeWindows[0]: unknown timezone); "
        "generation 2 stays in force"
    )
    assert ready["lastTransitionTime"] == "2023-11-16T02:00:00Z"  # it changed now
    assert invalid["message"] == "spec.activeWindows[0]: unknown timezone"
    assert status["matchedWorkloads"] == 2  # generation 2 still acts


def test_a_rejected_team_policy_matches_nothing() -> None:
    view = ObjectView("ml/team", 1, 1, rejected=[("spec.mode", "not allowed")])
    status = build_status(view, _plan(), snapshot(), {"lastAction": "x"})
    assert status["matchedWorkloads"] == 0
    assert status["candidates"] == []
    assert status["conditions"][1]["reason"] == "DelegationRejected"
    assert status["lastAction"] == "x"  # kept from before


def _object(generation: int, spec: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    return {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ClusterReclaimPolicy",
        "metadata": {"name": "fleet", "uid": uid, "generation": generation},
        "spec": spec,
    }


class _Cache:
    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {("", o["metadata"]["name"]): o for o in objects}
        self.synced = True


class _Informer:
    def __init__(self) -> None:
        self.cache = _Cache()

    def snapshot(self) -> _Cache:
        return self.cache


def test_generations_in_force() -> None:
    informer = _Informer()
    objects = PolicyObjects([informer])  # type: ignore[list-item]
    informer.cache = _Cache(_object(1, {"mode": "observe"}))
    assert [p.spec.mode.value for p in objects.policies()] == ["observe"]
    informer.cache = _Cache(_object(2, {"mode": "enforce"}))
    assert [p.spec.mode.value for p in objects.policies()] == ["enforce"]
    informer.cache = _Cache(_object(3, {"activeWindows": ["Mon 25:00-26:00 UTC"]}))
    assert [p.spec.mode.value for p in objects.policies()] == ["enforce"]  # 2 stays
    (tracked,) = objects.tracked.values()
    assert (tracked.generation, tracked.in_force) == (3, 2)
    assert tracked.invalid[0][0] == "spec.activeWindows[0]"
    informer.cache = _Cache(_object(1, {"activeWindows": ["Mon 25:00-26:00 UTC"]}, uid="u2"))
    assert objects.policies() == []  # deleted and created again: nothing valid yet
    informer.cache = _Cache()
    assert objects.policies() == []
    assert objects.tracked == {}


def test_pending_pods_that_count() -> None:
    base: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ml", "creationTimestamp": "2023-11-16T01:00:00Z"},
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Pending"},
    }
    found = pending_pod(base)
    assert found is not None
    assert dict(found.requests) == {"nvidia.com/gpu": 2}
    assert pending_pod({**base, "spec": {**base["spec"], "nodeName": "n1"}}) is None
    assert pending_pod({**base, "status": {"phase": "Running"}}) is None
    cpu = {**base, "spec": {"containers": [{"resources": {"requests": {"cpu": "2"}}}]}}
    assert pending_pod(cpu) is None


def test_an_opt_in_cluster_policy_without_a_team_policy_says_nothing_is_enforced() -> None:
    informer = _Informer()
    objects = PolicyObjects([informer])  # type: ignore[list-item]
    fleet = _object(1, {"mode": "enforce", "delegation": "optIn"})
    informer.cache = _Cache(fleet)
    policies = objects.policies()
    (tracked,) = objects.tracked.values()
    status = build_status(objects.view(tracked, policies), None, None, {})
    ready = status["conditions"][0]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert ready["message"] == (
        "generation 1 is in force; nothing is enforced: delegation optIn and no team policy opts in"
    )
    # A team's object that writes only what it changes opts in: it inherits the rest.
    team = {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ReclaimPolicy",
        "metadata": {"name": "team", "namespace": "ml", "uid": "u2", "generation": 1},
        "spec": {"ladder": {"gracePeriod": "2h"}},
    }
    informer.cache = _Cache(fleet, team)
    policies = objects.policies()
    views = {t.identity: objects.view(t, policies) for t in objects.tracked.values()}
    assert views["fleet"].note == ""
    assert views["ml/team"].rejected == []
    ready = build_status(views["fleet"], None, None, {})["conditions"][0]
    assert ready["message"] == "generation 1 is in force"
