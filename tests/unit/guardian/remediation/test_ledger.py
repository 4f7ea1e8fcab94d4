"""The ledger in SQLite: durable across reopen, deduplicated waits, cursors, the planner's
view; the status report built from it; the settings' safe defaults."""

from __future__ import annotations

from pathlib import Path

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.app.remediation.status import build_status
from guardian.app.settings.remediation import RemediationSettings
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef

REF = WorkloadRef("apps/v1", "Deployment", "ml", "train")
NOW = 1_700_000_000.0


def event(step: LadderStep, outcome: StepOutcome, at: float, **extra: object) -> RemediationEvent:
    return RemediationEvent(
        "ep1",
        REF,
        step,
        outcome,
        at,
        "idle",
        f"{step} {outcome}",
        LabelSet({"alertname": "GpuIdle"}),
        **extra,  # type: ignore[arg-type]
    )


def test_events_survive_reopen_and_feed_the_view(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    ledger = Ledger.open(path)
    ledger.open_episode(REF, "ep1", NOW - 600, "idle")
    first = ledger.record(
        event(
            LadderStep.NOTIFY,
            StepOutcome.APPLIED,
            NOW - 300,
            next_step=LadderStep.ANNOTATE,
            next_step_due=NOW + 3000,
        )
    )
    assert first is not None
    assert first.seq == 1
    ledger.close()

    ledger = Ledger.open(path)
    view = ledger.view(NOW)
    assert view.open_episodes == {REF: ("ep1", NOW - 600, "idle")}
    assert view.steps("ep1", real=True) == {LadderStep.NOTIFY: NOW - 300}
    (again,) = ledger.all_events()
    assert again == first
    ledger.close()


def test_waits_are_deduplicated_and_cursors_move_forward(tmp_path: Path) -> None:
    ledger = Ledger.open(str(tmp_path / "state.db"))
    refused = event(LadderStep.GRACE, StepOutcome.REFUSED, NOW)
    assert ledger.record(refused, dedupe=True) is not None
    assert ledger.record(refused, dedupe=True) is None
    assert ledger.record(event(LadderStep.NOTIFY, StepOutcome.APPLIED, NOW)) is not None
    assert [e.seq for e in ledger.events_since(0)] == [1, 2]
    ledger.ack("slack", 1)
    ledger.ack("slack", 0)  # never backwards
    assert ledger.cursor("slack") == 1
    assert [e.seq for e in ledger.events_since(ledger.cursor("slack"))] == [2]
    ledger.close()


def test_status_lists_alerts_pending_steps_and_reclaims(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")
    store = AlertStore.open(path)
    labels = LabelSet({"alertname": "GpuIdle", "namespace": "ml", "pod": "train-1"})
    store.save_group(
        "r.yaml;idle",
        NOW,
        {
            "GpuIdle": {
                labels: Alert(
                    labels, LabelSet(), AlertState.FIRING, NOW - 900, 0.0, fired_at=NOW - 600
                )
            }
        },
    )
    store.close()
    ledger = Ledger.open(path)
    ledger.open_episode(REF, "ep1", NOW - 600, "idle")
    ledger.record(
        event(
            LadderStep.ANNOTATE,
            StepOutcome.APPLIED,
            NOW - 60,
            next_step=LadderStep.RECLAIM,
            next_step_due=NOW + 3000,
        )
    )
    other = WorkloadRef("kubeflow.org/v1", "Notebook", "ml", "nb")
    ledger.open_episode(other, "ep2", NOW - 9000, "nb")
    ledger.record(
        RemediationEvent(
            "ep2",
            other,
            LadderStep.RECLAIM,
            StepOutcome.APPLIED,
            NOW - 100,
            "nb",
            "stopped",
            LabelSet(),
        )
    )
    ledger.set_episode_state("ep2", EpisodeState.RECLAIMED)
    report = build_status(ledger)
    text = report.render()
    ledger.close()
    assert "firing   GpuIdle" in text
    assert "ml/Deployment/train" in text
    assert "next reclaim  due 2023-11-14T23:03:20Z" in text
    assert "restore: guardian restore ml/Notebook/nb" in text
    assert report.alerts[0]["group"] == "idle"


def test_settings_default_to_doing_nothing() -> None:
    settings = RemediationSettings()
    assert (settings.enabled, settings.dry_run, settings.kill_switch) == (False, True, False)
    assert settings.leader_election.lease_duration == 15.0
    resolved = RemediationSettings.model_validate(
        {"policy_files": ["p/*.yaml"], "cycle_interval": "2m"}
    ).resolved(Path("/etc/guardian"))
    assert resolved.policy_files == ["/etc/guardian/p/*.yaml"]
    assert resolved.cycle_interval == 120.0
