"""The checkpoint handshake compares times at the precision they are written (issue #34):
``reclaim-requested-at`` is written in whole seconds, so an acknowledgement written in the
same second counts, whether the request time comes from the ledger (exact, with its
fraction of a second) or, after a restart, from the annotation."""

from __future__ import annotations

import dataclasses

import pytest

from guardian.engine.remediation import Cycle, PlannerSettings, plan
from guardian.engine.remediation.gates import annotation_time, as_written, requested_at
from guardian.engine.remediation.ladder import workload_episode
from guardian.model.policies import Annotations
from guardian.model.reclaim import ClusterSnapshot, LedgerEntry, LedgerView, Plan
from guardian.model.remediation_events import LadderStep, StepOutcome
from guardian.model.times import parse_rfc3339

from .factories import NOW, alert, enforce, healthy, ref, snapshot, workload

REAL = PlannerSettings(dry_run=False, pipeline_groups=("pipeline",))
EPISODE = workload_episode(ref(), NOW - 7200)
REQUESTED = NOW - 300 + 0.456  # the ledger keeps the step's exact time
WRITTEN = annotation_time(REQUESTED)  # what the executor put on the object
HANDSHAKE = enforce(checkpoint={"enabled": True, "timeout": "15m"})


def ledger(*, asked: bool) -> LedgerView:
    steps = [(LadderStep.NOTIFY, NOW - 7000.25), (LadderStep.ANNOTATE, NOW - 6940.5)]
    if asked:
        steps.append((LadderStep.CHECKPOINT, REQUESTED))
    entries = tuple(
        LedgerEntry(EPISODE, ref(), s, StepOutcome.APPLIED, at, "p", False) for s, at in steps
    )
    return LedgerView({ref(): (EPISODE, NOW - 7200, "p")}, entries)


def cluster(**annotations: str) -> ClusterSnapshot:
    return snapshot(workload(annotations=annotations))


def run(snap: ClusterSnapshot, view: LedgerView) -> Plan:
    return plan(Cycle([alert()], snap, view, NOW, health=healthy()), [HANDSHAKE], REAL)


def test_the_written_time_reads_back_as_the_compared_time() -> None:
    assert WRITTEN == "2023-11-16T01:55:00Z"  # the fraction of a second is cut
    assert parse_rfc3339(WRITTEN) == as_written(REQUESTED) == NOW - 300
    assert as_written(as_written(REQUESTED)) == as_written(REQUESTED)
    on_object = workload(annotations={Annotations.RECLAIM_REQUESTED_AT: WRITTEN})
    from_ledger = requested_at(on_object, REQUESTED, NOW - 7000.25)
    after_restart = requested_at(on_object, None, NOW - 7000.25)
    assert from_ledger == after_restart == NOW - 300


ACKS = [
    ("the same second", WRITTEN, True),
    ("the same second, with a fraction before the request's", "2023-11-16T01:55:00.100Z", True),
    ("a second later", annotation_time(REQUESTED + 1), True),
    ("a second earlier", annotation_time(REQUESTED - 1), False),
]


@pytest.mark.parametrize(("case", "ack", "counts"), ACKS, ids=[a[0] for a in ACKS])
@pytest.mark.parametrize("restarted", [False, True], ids=["ledger", "after a restart"])
def test_an_ack_in_the_second_of_the_request_counts(
    case: str, ack: str, counts: bool, restarted: bool
) -> None:
    snap = cluster(**{Annotations.RECLAIM_REQUESTED_AT: WRITTEN, Annotations.CHECKPOINTED_AT: ack})
    result = run(snap, ledger(asked=not restarted))
    if counts:
        assert [a.step for a in result.actions] == [LadderStep.RECLAIM], result.waits
        assert "; checkpointed at" in result.actions[0].reason
    else:
        assert not result.actions
        assert any(
            "waiting for gpu-guardian.io/checkpointed-at >= 2023-11-16T01:55:00Z" in w.reason
            for w in result.waits
        ), result.waits


def test_the_timeout_counts_from_the_written_request() -> None:
    """Before and after a restart, the deadline is the same: the request as written."""
    snap = cluster(**{Annotations.RECLAIM_REQUESTED_AT: WRITTEN})
    for view in (ledger(asked=True), ledger(asked=False)):
        (wait,) = [w for w in run(snap, view).waits if "waiting for" in w.reason]
        assert wait.reason.endswith("until 2023-11-16T02:10:00Z")


def test_the_request_on_the_object_still_needs_the_episodes_notification() -> None:
    """A request written in the second of the notification counts (both in whole seconds)."""
    notified = NOW - 7000.25
    same_second = workload(
        annotations={Annotations.RECLAIM_REQUESTED_AT: annotation_time(notified)}
    )
    assert requested_at(same_second, None, notified) == as_written(notified)
    earlier = dataclasses.replace(
        same_second,
        annotations={Annotations.RECLAIM_REQUESTED_AT: annotation_time(notified - 1)},
    )
    assert requested_at(earlier, None, notified) is None
