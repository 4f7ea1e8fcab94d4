"""The delegation rule: a team's ReclaimPolicy only narrows the cluster policy."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.delegation import review, violations
from guardian.model.policies import ReclaimPolicy
from guardian.model.reclaim import LedgerView

from .factories import NOW, alert, healthy, snapshot


def cluster(name: str = "fleet", delegation: str = "allow", **spec: Any) -> ReclaimPolicy:
    spec.setdefault("ladder", {"gracePeriod": "1h"})
    spec.setdefault("warmup", "10m")
    spec.setdefault("mode", "enforce")
    return ReclaimPolicy.model_validate(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ClusterReclaimPolicy",
            "metadata": {"name": name},
            "spec": {"delegation": delegation, **spec},
        }
    )


def team(name: str = "team", namespace: str = "ml", **spec: Any) -> ReclaimPolicy:
    spec.setdefault("ladder", {"gracePeriod": "2h"})
    spec.setdefault("warmup", "10m")
    return ReclaimPolicy.model_validate(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ReclaimPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


# (id, cluster spec, team spec, the violated field or None when it only narrows)
RULES: list[tuple[str, dict[str, Any], dict[str, Any], str | None]] = [
    ("same settings narrow nothing", {}, {"ladder": {"gracePeriod": "1h"}}, None),
    ("longer grace", {}, {"ladder": {"gracePeriod": "3h"}}, None),
    ("shorter grace", {}, {"ladder": {"gracePeriod": "10m"}}, "spec.ladder.gracePeriod"),
    ("shorter warm-up", {}, {"warmup": "5m"}, "spec.warmup"),
    ("observe under enforce", {}, {"mode": "observe"}, None),
    ("enforce under observe", {"mode": "observe"}, {"mode": "enforce"}, "spec.mode"),
    ("own namespace listed", {}, {"scope": {"namespaces": ["ml"]}}, None),
    ("other namespace", {}, {"scope": {"namespaces": ["ml", "prod"]}}, "spec.scope.namespaces"),
    (
        "kinds narrowed",
        {"scope": {"kinds": ["Deployment", "Job"]}},
        {"scope": {"kinds": ["Job"]}},
        None,
    ),
    (
        "kinds widened",
        {"scope": {"kinds": ["Job"]}},
        {"scope": {"kinds": ["Job", "Pod"]}},
        "spec.scope.kinds",
    ),
    (
        "any kind widens",
        {"scope": {"kinds": ["Job"]}},
        {"scope": {"kinds": []}},
        "spec.scope.kinds",
    ),
    ("kinds left out are inherited", {"scope": {"kinds": ["Job"]}}, {}, None),
    (
        "alerts widened",
        {"alerts": {"names": ["GpuIdle"]}},
        {"alerts": {"names": ["Other"]}},
        "spec.alerts.names",
    ),
    (
        "more reclaims per cycle",
        {"limits": {"perCycle": 2}},
        {"limits": {"perCycle": 3}},
        "spec.limits.perCycle",
    ),
    ("fewer reclaims", {"limits": {"perCycle": 2}}, {"limits": {"perCycle": 1}}, None),
    ("pod deletion", {}, {"allowPodDeletion": True}, "spec.allowPodDeletion"),
    ("hpa record", {}, {"hpa": "record"}, "spec.hpa"),
    ("ignore silences", {}, {"respectSilences": False}, "spec.respectSilences"),
    (
        "reclaim where the cluster warns only",
        {"ladder": {"gracePeriod": "1h", "reclaim": False}},
        {"ladder": {"gracePeriod": "2h", "reclaim": True}},
        "spec.ladder.reclaim",
    ),
    ("warn only, inherited", {"ladder": {"gracePeriod": "1h", "reclaim": False}}, {}, None),
    (
        "skip annotate",
        {},
        {"ladder": {"gracePeriod": "2h", "annotate": False}},
        "spec.ladder.annotate",
    ),
    ("demand added", {}, {"reclaim": {"when": "demand"}}, None),
    (
        "demand dropped",
        {"reclaim": {"when": "demand"}},
        {"reclaim": {"when": "always"}},
        "spec.reclaim.when",
    ),
    ("demand inherited", {"reclaim": {"when": "demand"}}, {}, None),
    (
        "shorter pendingFor",
        {"reclaim": {"when": "demand", "pendingFor": "10m"}},
        {"reclaim": {"when": "demand", "pendingFor": "1m"}},
        "spec.reclaim.pendingFor",
    ),
    ("checkpoint added", {}, {"checkpoint": {"enabled": True}}, None),
    (
        "checkpoint dropped",
        {"checkpoint": {"enabled": True}},
        {"checkpoint": {"enabled": False}},
        "spec.checkpoint.enabled",
    ),
    ("checkpoint inherited", {"checkpoint": {"enabled": True}}, {}, None),
    (
        "shorter checkpoint timeout",
        {"checkpoint": {"enabled": True, "timeout": "30m"}},
        {"checkpoint": {"enabled": True, "timeout": "5m"}},
        "spec.checkpoint.timeout",
    ),
    (
        "reclaim where the cluster gives up",
        {"checkpoint": {"enabled": True, "onTimeout": "giveUp"}},
        {"checkpoint": {"enabled": True, "onTimeout": "reclaim"}},
        "spec.checkpoint.onTimeout",
    ),
    (
        "giveUp inherited",
        {"checkpoint": {"enabled": True, "onTimeout": "giveUp"}},
        {"checkpoint": {"enabled": True}},
        None,
    ),
    ("rightSize where the cluster only notifies", {}, {"partial": "rightSize"}, "spec.partial"),
    ("notify where the cluster right-sizes", {"partial": "rightSize"}, {}, None),
    ("windows added", {}, {"activeWindows": ["Mon-Fri 09:00-17:00 UTC"]}, None),
    (
        "notify outside where the cluster does not",
        {"notifyOutsideWindows": False},
        {"notifyOutsideWindows": True},
        "spec.notifyOutsideWindows",
    ),
    ("notifyOutsideWindows: false inherited", {"notifyOutsideWindows": False}, {}, None),
    (
        "exclusions added",
        {},
        {"exclusions": {"workloadSelector": {"matchLabels": {"x": "y"}}}},
        None,
    ),
]


@pytest.mark.parametrize(
    ("cspec", "tspec", "field"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_rule(cspec: dict[str, Any], tspec: dict[str, Any], field: str | None) -> None:
    found = violations(team(**tspec), cluster(**cspec))
    assert [f for f, _ in found] == ([field] if field else [])


def test_no_delegation() -> None:
    assert [f for f, _ in violations(team(), cluster(delegation="none"))] == [""]
    (only,) = review(team(), [cluster(delegation="none")])
    assert only[0] == "metadata.namespace"
    assert "no ClusterReclaimPolicy delegates to namespace ml" in only[1]


def test_review_names_the_cluster_policy() -> None:
    ((field, why),) = review(team(mode="enforce"), [cluster(mode="observe")])
    assert field == "spec.mode"
    assert why.endswith("(ClusterReclaimPolicy fleet)")
    scoped = cluster("other", scope={"namespaces": ["prod"]})
    assert review(team(), [scoped]) != []  # prod's policy does not delegate to ml


def test_a_team_policy_cannot_delegate() -> None:
    with pytest.raises(ValueError, match="only a cluster policy delegates"):
        team(delegation="allow")


def run(*policies: ReclaimPolicy) -> tuple[list[tuple[str, str]], list[str]]:
    result = plan(
        Cycle([alert()], snapshot(), LedgerView(), NOW, health=healthy()),
        list(policies),
        PlannerSettings(dry_run=False, pipeline_groups=("pipeline",)),
    )
    return [(a.step.value, a.policy) for a in result.actions], [w.reason for w in result.waits]


# (id, policies, (step, policy) expected or "wait:<substring>")
GOVERN: list[tuple[str, list[ReclaimPolicy], Any]] = [
    ("cluster alone", [cluster()], [("notify", "fleet")]),
    ("a valid team policy governs", [cluster(), team()], [("notify", "ml/team")]),
    (
        "a widening team policy has no effect",
        [cluster(), team(ladder={"gracePeriod": "1m"})],
        [("notify", "fleet")],
    ),
    ("no delegation: team ignored", [cluster(delegation="none"), team()], [("notify", "fleet")]),
    (
        "opt-in without a team policy",
        [cluster(delegation="optIn")],
        "wait:acts only where a team opts in",
    ),
    ("opt-in with one", [cluster(delegation="optIn"), team()], [("notify", "ml/team")]),
    (
        "opt-in with a widening one",
        [cluster(delegation="optIn"), team(mode="enforce", ladder={"gracePeriod": "1m"})],
        "wait:acts only where a team opts in",
    ),
    (
        "another namespace's team policy",
        [cluster(delegation="optIn"), team(namespace="other")],
        "wait:acts only where",
    ),
    ("a team policy alone does nothing", [team()], "wait:no policy matches"),
    (
        "team exclusions apply",
        [cluster(), team(exclusions={"namespaces": ["ml"]})],
        "wait:policy ml/team excludes namespace ml",
    ),
    (
        "cluster exclusions still apply",
        [cluster(exclusions={"namespaces": ["ml"]}), team()],
        "wait:policy ml/team excludes namespace ml",  # the team's inherits them
    ),
    (
        "cluster windows still apply",
        [
            cluster(activeWindows=["Sat 10:00-11:00 UTC"], notifyOutsideWindows=False),
            team(notifyOutsideWindows=False),
        ],
        "wait:outside the active windows",
    ),
]


@pytest.mark.parametrize(
    ("policies", "expect"), [g[1:] for g in GOVERN], ids=[g[0] for g in GOVERN]
)
def test_governing(policies: list[ReclaimPolicy], expect: Any) -> None:
    actions, waits = run(*policies)
    if isinstance(expect, str):
        assert not actions
        assert any(expect[5:] in w for w in waits), waits
    else:
        assert actions == expect, waits
