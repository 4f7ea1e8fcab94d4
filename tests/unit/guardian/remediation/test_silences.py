"""Alertmanager's silences hold the ladder (respectSilences, default on): the planner waits
with Alertmanager's reason; a restore is never held; the switch is per policy."""

from __future__ import annotations

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.model.policies import Annotations
from guardian.model.reclaim import LedgerView, Plan
from guardian.model.remediation_events import LadderStep
from guardian.model.suppressions import NOT_CHECKED, Suppressions

from .factories import NOW, alert, enforce, healthy, snapshot, workload

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
SILENCED = "silenced in Alertmanager by alice until 2023-11-16T03:00:00Z (silence s1: maint)"
ASKED = frozenset({alert().labels})


def _plan(suppressions: Suppressions, **spec: object) -> Plan:
    return plan(
        Cycle(
            [alert()], snapshot(), LedgerView(), NOW, health=healthy(), suppressions=suppressions
        ),
        [enforce(**spec)],
        REAL,
    )


def test_without_alertmanager_nothing_is_held() -> None:
    result = _plan(NOT_CHECKED)
    assert [a.step for a in result.actions] == [LadderStep.NOTIFY]


def test_a_silenced_alert_holds_every_ladder_step_with_alertmanagers_reason() -> None:
    held = Suppressions(checked=True, held={alert().labels: SILENCED}, asked=ASKED)
    result = _plan(held)
    assert result.actions == ()
    (wait,) = result.waits
    assert wait.reason == SILENCED
    assert wait.refused


def test_an_alert_alertmanager_does_not_hold_goes_ahead() -> None:
    other = alert(pod="other-1").labels
    asked = frozenset({alert().labels, other})
    result = _plan(Suppressions(checked=True, held={other: SILENCED}, asked=asked))
    assert [a.step for a in result.actions] == [LadderStep.NOTIFY]


def test_an_alert_not_asked_about_this_cycle_is_unknown() -> None:
    result = _plan(Suppressions(checked=True, asked=frozenset({alert(pod="other-1").labels})))
    assert result.actions == ()
    assert result.waits[0].reason == (
        "Alertmanager was not asked about GpuIdle this cycle (missing data: no step)"
    )


def test_no_alertmanager_answering_is_missing_data() -> None:
    down = Suppressions(checked=True, unavailable="no Alertmanager answered (refused)")
    result = _plan(down)
    assert result.actions == ()
    assert result.waits[0].reason == "no Alertmanager answered (refused)"


@pytest.mark.parametrize("held", [Suppressions(checked=True, unavailable="down")])
def test_respect_silences_false_ignores_alertmanager(held: Suppressions) -> None:
    result = _plan(held, respectSilences=False)
    assert [a.step for a in result.actions] == [LadderStep.NOTIFY]


def test_exclusion_and_missing_data_are_said_before_silences() -> None:
    held = Suppressions(checked=True, held={alert().labels: SILENCED})
    result = plan(
        Cycle(
            [alert()],
            snapshot(workload(annotations={Annotations.EXCLUDE: "true"})),
            LedgerView(),
            NOW,
            health=healthy(),
            suppressions=held,
        ),
        [enforce()],
        REAL,
    )
    assert "exclude=true" in result.waits[0].reason


def test_a_restore_is_never_held_by_a_silence() -> None:
    reclaimed = workload(
        annotations={
            Annotations.RECLAIMED_AT: "2023-11-16T00:00:00Z",
            Annotations.EXCLUDE: "true",
            Annotations.ORIGINAL_REPLICAS: "2",
        },
        replicas=0,
    )
    result = plan(
        Cycle(
            [alert()],
            snapshot(reclaimed),
            LedgerView(),
            NOW,
            health=healthy(),
            suppressions=Suppressions(checked=True, unavailable="down"),
        ),
        [enforce()],
        REAL,
    )
    assert [a.step for a in result.actions] == [LadderStep.RESTORE]


def test_the_policy_field_defaults_to_on_and_reads_its_yaml_name() -> None:
    assert enforce().spec.respect_silences is True
    assert enforce(respectSilences=False).spec.respect_silences is False
