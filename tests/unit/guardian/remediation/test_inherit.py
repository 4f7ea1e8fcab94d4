"""Team policies inherit what they do not write from the cluster policy that delegates."""

from __future__ import annotations

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.delegation import (
    NOTHING_ENFORCED,
    enforcing,
    judge,
    opt_in_gap,
    review,
)
from guardian.engine.remediation.inherit import Origin, inherit, inherited, leaves, written
from guardian.model.policies import ReclaimPolicy
from guardian.model.policies_load import parse_policies
from guardian.model.reclaim import LedgerView
from guardian.model.remediation_events import LadderStep

from .factories import NOW, alert, healthy, snapshot, workload

FLEET = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ClusterReclaimPolicy
metadata:
  name: fleet
spec:
  mode: enforce
  delegation: optIn
  alerts:
    names: [GpuIdle]
  ladder:
    gracePeriod: 2h
    annotate: false
  warmup: 1h
  limits: {perCycle: 2, perNamespacePerHour: 4}
  exclusions:
    namespaces: [ml-prod]
  activeWindows: ["Mon-Fri 08:00-19:00 Europe/Berlin"]
  reclaim: {when: demand, pendingFor: 15m}
  checkpoint: {enabled: true, timeout: 30m, onTimeout: giveUp}
"""

# The reported case: six lines, under a cluster policy with seven stricter settings.
TEAM = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: training, namespace: ml}
spec:
  mode: enforce
  ladder: {gracePeriod: 3h}
"""


def load(text: str) -> ReclaimPolicy:
    (only,) = parse_policies(text, "p.yaml")
    return only


def test_a_six_line_team_policy_is_accepted_and_inherits_the_rest() -> None:
    fleet, team = load(FLEET), load(TEAM)
    assert len(TEAM.splitlines()) == 6
    assert review(team, [fleet]) == []
    found = inherit(team, fleet)
    mine = leaves(found.policy.spec)
    theirs = leaves(fleet.spec)
    assert mine["ladder.gracePeriod"] == 3 * 3600
    own = {"ladder.gracePeriod", "scope.namespaces", "delegation"}
    assert {k: v for k, v in mine.items() if k not in own} == {
        k: v for k, v in theirs.items() if k not in own
    }
    assert mine["delegation"].value == "none"  # only a cluster policy delegates
    assert found.policy.name == "ml/training"
    assert found.policy.source == "p.yaml:1"
    assert found.origins["ladder.gracePeriod"] is Origin.OWN
    assert found.origins["warmup"] is Origin.PARENT
    assert found.origins["ladder.notify"] is Origin.DEFAULT  # written by neither
    assert opt_in_gap(fleet, [fleet, team]) is None


def test_not_written_means_absent_not_equal_to_the_default() -> None:
    # warmup: 30m is the default value, but the team wrote it: it is theirs, and too short.
    team = load(TEAM + "  warmup: 30m\n")
    assert written(team.spec) == {"mode", "ladder.gracePeriod", "warmup"}
    ((field, why),) = review(team, [load(FLEET)])
    assert field == "spec.warmup"
    assert why == "30m is shorter than the cluster minimum 1h (ClusterReclaimPolicy fleet)"


@pytest.mark.parametrize(
    ("extra", "field", "why"),
    [
        (
            "  limits: {perCycle: 3}\n",
            "spec.limits.perCycle",
            "3 is more than the cluster maximum 2",
        ),
        (
            "  reclaim: {pendingFor: 1m}\n",
            "spec.reclaim.pendingFor",
            "1m is shorter than the cluster minimum 15m",
        ),
        (
            "  checkpoint: {timeout: 45s}\n",
            "spec.checkpoint.timeout",
            "45s is shorter than the cluster minimum 30m",
        ),
        (
            "  checkpoint: {onTimeout: reclaim}\n",
            "spec.checkpoint.onTimeout",
            "not allowed: the cluster policy gives up when no checkpoint comes",
        ),
        ("  scope: {kinds: []}\n", None, None),  # the cluster lists no kinds: any is fine
    ],
)
def test_a_field_the_team_writes_still_may_only_narrow(
    extra: str, field: str | None, why: str | None
) -> None:
    found = review(load(TEAM + extra), [load(FLEET)])
    if field is None:
        assert found == []
    else:
        assert found == [(field, f"{why} (ClusterReclaimPolicy fleet)")]


def test_nested_fields_inherit_one_by_one() -> None:
    # The team writes ladder.gracePeriod; ladder.annotate (false) is the cluster's.
    found = inherit(load(TEAM), load(FLEET))
    ladder = found.policy.spec.ladder
    assert (ladder.grace_period, ladder.annotate, ladder.notify) == (10800.0, False, True)
    assert found.origins["ladder.annotate"] is Origin.PARENT
    checkpoint = found.policy.spec.checkpoint
    assert (checkpoint.enabled, checkpoint.timeout, checkpoint.on_timeout.value) == (
        True,
        1800.0,
        "giveUp",
    )
    deeper = inherit(load(TEAM + "  checkpoint: {timeout: 1h}\n"), load(FLEET))
    checkpoint = deeper.policy.spec.checkpoint
    assert (checkpoint.enabled, checkpoint.timeout) == (True, 3600.0)
    assert deeper.origins["checkpoint.timeout"] is Origin.OWN
    assert deeper.origins["checkpoint.enabled"] is Origin.PARENT


def test_merge_rules_for_lists() -> None:
    team = load(
        TEAM
        + "  scope: {namespaces: [ml]}\n"
        + "  exclusions: {namespaces: [ml-scratch]}\n"
        + '  activeWindows: ["Mon-Fri 09:00-17:00 Europe/Berlin"]\n'
    )
    found = inherit(team, load(FLEET))
    spec = found.policy.spec
    assert spec.exclusions.namespaces == ("ml-prod", "ml-scratch")  # added up
    assert found.origins["exclusions.namespaces"] is Origin.BOTH
    assert spec.active_windows == ("Mon-Fri 09:00-17:00 Europe/Berlin",)  # replaced ...
    assert found.origins["activeWindows"] is Origin.BOTH  # ... and the cluster's still apply
    assert spec.scope.namespaces == ("ml",)
    # scope.namespaces is never inherited: a team's policy acts in its own namespace.
    scoped = load(FLEET.replace("  alerts:", "  scope: {namespaces: [ml, prod]}\n  alerts:"))
    assert inherit(load(TEAM), scoped).policy.spec.scope.namespaces == ()
    assert review(load(TEAM), [scoped]) == []


def test_a_combination_that_is_no_policy_is_rejected_with_its_field() -> None:
    cluster = load(FLEET.replace("  warmup: 1h\n", "  warmup: 1h\n  partial: rightSize\n"))
    team = load(TEAM.replace("{gracePeriod: 3h}", "{gracePeriod: 3h, reclaim: false}"))
    ((field, why),) = review(team, [cluster])
    assert field == "spec"
    assert why.startswith("partial: rightSize needs ladder.reclaim: true")
    assert "with what it inherits from ClusterReclaimPolicy fleet" in why


def test_inherited_is_remembered_per_pair() -> None:
    fleet, team = load(FLEET), load(TEAM)
    assert inherited(team, fleet) is inherited(team, fleet)
    assert judge(team, fleet)[0].policy.spec.warmup == 3600.0


def _cluster(delegation: str) -> ReclaimPolicy:
    return load(FLEET.replace("delegation: optIn", f"delegation: {delegation}"))


def test_opt_in_without_a_team_policy_enforces_nothing() -> None:
    assert opt_in_gap(_cluster("optIn"), [_cluster("optIn")]) == NOTHING_ENFORCED
    assert NOTHING_ENFORCED == "nothing is enforced: delegation optIn and no team policy opts in"
    assert opt_in_gap(_cluster("allow"), []) is None
    hasty = load(TEAM.replace("3h", "1m"))
    assert opt_in_gap(_cluster("optIn"), [hasty]) == f"{NOTHING_ENFORCED} (rejected: ml/training)"
    other = load(TEAM.replace("namespace: ml", "namespace: other"))
    scoped = load(FLEET.replace("  alerts:", "  scope: {namespaces: [ml]}\n  alerts:"))
    assert opt_in_gap(scoped, [scoped, other]) == NOTHING_ENFORCED  # not delegated to


def test_the_planner_acts_with_the_effective_policy() -> None:
    """A team's policy that writes only ``mode`` and ``ladder.gracePeriod``: its grace
    period, the cluster's warm-up (10m: the default 30m would hold this 20-minute-old
    workload) and the cluster's ladder without annotate (the reclaim comes next)."""
    cluster = load(
        FLEET.replace("  warmup: 1h\n", "  warmup: 10m\n")
        .replace('  activeWindows: ["Mon-Fri 08:00-19:00 Europe/Berlin"]\n', "")
        .replace("  reclaim: {when: demand, pendingFor: 15m}\n", "")
        .replace("  checkpoint: {enabled: true, timeout: 30m, onTimeout: giveUp}\n", "")
    )
    team = load(TEAM.replace("mode: enforce", "mode: observe"))
    young = workload(created_at=NOW - 1200)
    result = plan(
        Cycle([alert()], snapshot(young), LedgerView(), NOW, health=healthy()),
        [cluster, team],
        PlannerSettings(dry_run=False, pipeline_groups=("pipeline",)),
    )
    assert [w.reason for w in result.waits] == []
    (action,) = result.actions
    assert (action.step, action.policy, action.dry_run) == (
        LadderStep.NOTIFY,
        "ml/training",
        True,  # the team's observe
    )
    assert action.next_step is LadderStep.RECLAIM  # the cluster's annotate: false
    assert action.next_step_due == NOW + 3 * 3600  # the team's grace period


def test_without_the_team_policy_nothing_acts_under_opt_in() -> None:
    result = plan(
        Cycle([alert()], snapshot(), LedgerView(), NOW, health=healthy()),
        [load(FLEET)],
        PlannerSettings(dry_run=False, pipeline_groups=("pipeline",)),
    )
    assert result.actions == ()
    assert any("acts only where a team opts in" in w.reason for w in result.waits)


def test_a_team_policy_enforces_with_the_mode_it_inherits() -> None:
    fleet = load(FLEET)  # mode: enforce
    quiet = load(TEAM.replace("  mode: enforce\n", ""))
    assert enforcing([fleet, quiet]) == {"fleet", "ml/training"}
    observing = load(TEAM.replace("mode: enforce", "mode: observe"))
    assert enforcing([fleet, observing]) == {"fleet"}
    hasty = load(TEAM.replace("3h", "1m"))
    assert enforcing([fleet, hasty]) == {"fleet"}  # rejected: it does not act
