"""Restore a reclaimed workload: ``guardian restore NAMESPACE/KIND/NAME``."""

from __future__ import annotations

import logging

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import Conflict
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import PlannedAction
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef
from guardian_common.errors import ConfigError, PermanentError, TransientError

logger = logging.getLogger(__name__)


def parse_target(text: str, reader: KubeReader) -> WorkloadRef:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigError(f"expected NAMESPACE/KIND/NAME, got {text!r}", field="target")
    namespace, kind, name = parts
    api_version, kind = reader.find_kind(kind)
    return WorkloadRef(api_version, kind, namespace, name)


def restore_workload(
    ref: WorkloadRef,
    reader: KubeReader,
    executor: Executor,
    ledger: Ledger | None,
    now: float,
    *,
    dry_run: bool = False,
    who: str = "guardian restore",
) -> str:
    """Restore ``ref``: exact replicas, unsuspend, clear our annotations, start a warm-up.
    Retries a conflict after reading again; raises PermanentError if ``ref`` was not
    reclaimed by us."""
    for _ in range(3):
        ws = reader.workload(ref)
        if Annotations.RECLAIMED_AT not in ws.annotations:
            raise PermanentError(
                f"{ref} was not reclaimed by gpu-guardian (no {Annotations.RECLAIMED_AT} "
                "annotation); nothing to restore"
            )
        episode = ws.annotations.get(Annotations.EPISODE, "")
        policy = ws.annotations.get(Annotations.RECLAIMED_BY, "")
        action = PlannedAction(
            ref, LadderStep.RESTORE, policy, episode, f"requested by {who}", dry_run, LabelSet()
        )
        try:
            result = executor.apply(action, ws, now)
        except Conflict:
            logger.info("conflict restoring %s: reading again", ref)
            continue
        if ledger is not None:
            ledger.record(
                RemediationEvent(
                    episode=episode,
                    workload=ref,
                    step=LadderStep.RESTORE,
                    outcome=result.outcome,
                    at=now,
                    policy=policy,
                    reason=f"{result.message}: requested by {who}",
                    alert_labels=LabelSet(),
                    original_replicas=int(o)
                    if (o := ws.annotations.get(Annotations.ORIGINAL_REPLICAS, "")).isdigit()
                    else None,
                )
            )
            if result.outcome is StepOutcome.APPLIED:
                ledger.end_workload_episodes(ref, EpisodeState.RESTORED, now)
        return result.message
    raise TransientError(f"{ref} kept changing while restoring it; try again")
