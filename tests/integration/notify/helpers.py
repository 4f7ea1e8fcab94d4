"""Builders shared by the Slack notifier's integration tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guardian.adapters.sqlite_db import Database
from guardian.app.notify import SlackNotifier, SlackSettings
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import (
    LadderStep,
    RemediationEvent,
    StepOutcome,
    WorkloadRef,
)
from testbed.slackapi import Channel, FakeSlack

TOKEN = "xoxb-guardian-test-0123456789"  # noqa: S105 - the fake workspace's bot token
ALERTS = Channel("C0123", "gpu-alerts")
TEAM = Channel("C0456", "ml-team")
T0 = 1_700_000_000.0


def labels(pod: str = "train-0", namespace: str = "ml", **extra: str) -> LabelSet:
    return LabelSet(
        {
            "alertname": "GpuIdle",
            "severity": "warning",
            "cluster": "prod",
            "namespace": namespace,
            "pod": pod,
            "node": "gpu-node-1",
            "gpu_group": "a100",
            "gpu_model": "NVIDIA A100-SXM4-80GB",
            **extra,
        }
    )


ANNOTATIONS = LabelSet(
    {
        "summary": "An allocated GPU has been idle for the whole idle window.",
        "runbook_url": "https://gpu-guardian.io/runbooks/gpuidle",
    }
)


def transition(
    kind: TransitionKind, lbls: LabelSet, *, at: float, active_at: float = T0
) -> AlertTransition:
    previous = AlertState.PENDING if kind is TransitionKind.FIRING else AlertState.FIRING
    return AlertTransition(
        kind=kind,
        previous=previous,
        group="guardian-gpu-idle",
        rule="GpuIdle",
        labels=lbls,
        annotations=ANNOTATIONS,
        value=0.01,
        active_at=active_at,
        at=at,
        evidence=Evidence(EvaluationHealth.OK, at, "GpuIdle expr"),
    )


def firing(lbls: LabelSet, at: float = T0 + 300) -> AlertTransition:
    return transition(TransitionKind.FIRING, lbls, at=at)


def resolved(lbls: LabelSet, at: float) -> AlertTransition:
    return transition(TransitionKind.RESOLVED, lbls, at=at)


WORKLOAD = WorkloadRef("apps/v1", "Deployment", "ml", "train")


def event(
    lbls: LabelSet,
    step: LadderStep,
    at: float,
    outcome: StepOutcome = StepOutcome.APPLIED,
    **kw: Any,
) -> RemediationEvent:
    # The ledger keys episodes by workload (not by alert): the notifier must match them.
    return RemediationEvent(
        episode=f"workload-episode-{lbls['pod']}",
        workload=WORKLOAD,
        step=step,
        outcome=outcome,
        at=at,
        policy="reclaim-idle",
        reason="idle for 30m",
        **{"alert_labels": lbls, **kw},
    )


def settings(fake: FakeSlack | None, **overrides: Any) -> SlackSettings:
    data: dict[str, Any] = {
        "routing": {"default_channel": "#gpu-alerts"},
        "prices": {"per_model": {"A100": 4.0}},
        "delivery": {"post_interval": "100ms", "backoff_initial": "50ms", "backoff_max": "1s"},
    }
    if fake is not None:
        data["api_url"] = fake.api_base_url
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return SlackSettings.model_validate(data)


def notifier(
    fake: FakeSlack,
    db: Database,
    clock: Callable[[], float] = time.time,
    **overrides: Any,
) -> SlackNotifier:
    return SlackNotifier.from_settings(
        settings(fake, **overrides), db, clock, {"SLACK_BOT_TOKEN": TOKEN}
    )


def open_db(path: Path) -> Database:
    return Database.open(path / "state.db")


def drain_all(n: SlackNotifier, timeout: float = 30.0) -> None:
    """Drain with the real clock until the outbox is empty."""
    deadline = time.monotonic() + timeout
    while (due := n.drain()) is not None:
        assert time.monotonic() < deadline, "the outbox did not drain in time"
        time.sleep(min(0.5, max(0.01, due - time.time())))
