"""The executor: the only remediation code with side effects on the cluster.

Every write is a JSON merge patch with field manager ``gpu-guardian``. Writes that stop
or restore a workload carry the observed ``resourceVersion``, so a concurrent change
gives 409 and the caller reads again and re-plans. In dry-run nothing is written: the
executor logs what it would do and says so in its result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from guardian.adapters.kube.events import EventRecorder
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest, NotFound, Obj, object_path
from guardian.engine.remediation.gates import annotation_time
from guardian.model.policies import NOTEBOOK_STOPPED, Annotations
from guardian.model.reclaim import ActionKind, PlannedAction, WorkloadState
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian.model.times import rfc3339
from guardian_common.errors import PermanentError
from guardian_common.words import plural

logger = logging.getLogger(__name__)

_PENDING = {
    ActionKind.SCALE: "scale to 0",
    ActionKind.SCALE_SUBRESOURCE: "scale to 0",
    ActionKind.SUSPEND: "suspend",
    ActionKind.NOTEBOOK: "stop notebook",
    ActionKind.POD: "delete pod",
}
_REASONS = {
    LadderStep.NOTIFY: "GPUIdleNotified",
    LadderStep.ANNOTATE: "GPUIdleFlagged",
    LadderStep.CHECKPOINT: "GPUReclaimCheckpointRequested",
    LadderStep.RECLAIM: "GPUIdleReclaimed",
    LadderStep.RESTORE: "GPUReclaimRestored",
}
# Some of a workload idle, not all: said once per episode, never acted on.
PARTLY_IDLE_EVENT = "GPUPartlyIdle"


@dataclass(frozen=True)
class Result:
    outcome: StepOutcome
    message: str


@dataclass(frozen=True)
class Hold:
    """Annotations a person asked for, with the Event that says so."""

    annotations: dict[str, str]
    reason: str  # the Event's reason, e.g. GPUIdleKept
    message: str
    episode: str


def event_reason(step: LadderStep) -> str:
    """The reason of the Kubernetes Event a step records on its workload."""
    return _REASONS.get(step, "GPUGuardian")


def restore_command(ref: WorkloadRef) -> str:
    return f"guardian restore {ref.namespace}/{ref.kind}/{ref.name}"


def _reclaimed_count(ws: WorkloadState) -> int:
    """The replicas the reclaim left: 0, or what a right-size kept."""
    kept = ws.annotations.get(Annotations.RIGHT_SIZED_TO, "")
    return int(kept) if kept.isdigit() else 0


def original_replicas(ws: WorkloadState) -> int | None:
    """The replica count the reclaim recorded on the object (None: none, or not a count)."""
    original = ws.annotations.get(Annotations.ORIGINAL_REPLICAS, "")
    return int(original) if original.isdigit() else None


class Executor:
    def __init__(
        self, rest: KubeRest, reader: KubeReader, *, instance: str = "gpu-guardian"
    ) -> None:
        self.rest = rest
        self.reader = reader
        self.events = EventRecorder(rest, instance)

    def apply(self, action: PlannedAction, ws: WorkloadState, now: float) -> Result:
        """Apply one planned step to ``ws`` (as just read). Raises the rest module's errors."""
        describe = self.describe(action, ws)
        if action.dry_run:
            logger.info("dry-run: would %s on %s (%s)", describe, ws.ref, action.reason)
            return Result(StepOutcome.DRY_RUN, f"would {describe}")
        if action.step is LadderStep.ANNOTATE:
            self._annotate(action, ws, now)
        elif action.step is LadderStep.CHECKPOINT:
            self._request_checkpoint(action, ws, now)
        elif action.step is LadderStep.RECLAIM:
            self._reclaim(action, ws, now)
        elif action.step is LadderStep.RESTORE:
            describe = self.restore(ws, now)
        logger.info("%s on %s: done (%s)", describe, ws.ref, action.reason)
        self.events.record(
            ws,
            event_reason(action.step),
            f"{describe}: {action.reason}",
            episode=action.episode,
            now=now,
            warning=action.step in (LadderStep.NOTIFY, LadderStep.ANNOTATE, LadderStep.CHECKPOINT),
        )
        return Result(StepOutcome.APPLIED, describe)

    def hold(self, ws: WorkloadState, hold: Hold, now: float) -> Result:
        """Set annotations a person asked for (a Slack button: snooze, exclude) on ``ws``
        (as just read) in one conditional write, and record the Event. Raises the rest
        module's errors (409: read again and decide again)."""
        patch = {
            "metadata": {"resourceVersion": ws.resource_version, "annotations": hold.annotations}
        }
        self.rest.merge_patch(self._path(ws), patch)
        logger.info("%s on %s: done", hold.message, ws.ref)
        self.events.record(ws, hold.reason, hold.message, episode=hold.episode, now=now)
        return Result(StepOutcome.APPLIED, hold.message)

    def unflag(self, ws: WorkloadState) -> None:
        """Clear the annotate step's marks when an episode ends without a reclaim."""
        if not any(key in ws.annotations for key in Annotations.FLAG_KEYS):
            return
        cleared = dict.fromkeys(Annotations.FLAG_KEYS)
        self.rest.merge_patch(self._path(ws), {"metadata": {"annotations": cleared}})
        logger.info("episode over on %s: cleared its idle flag", ws.ref)

    def describe(self, action: PlannedAction, ws: WorkloadState) -> str:
        if action.step is LadderStep.NOTIFY:
            return "notify the owner"
        if action.step is LadderStep.ANNOTATE:
            return "annotate the workload as idle"
        if action.step is LadderStep.RESTORE:
            return "restore the workload"
        if action.step is LadderStep.CHECKPOINT:
            return "ask the workload to checkpoint before the reclaim"
        if action.right_size is not None:
            sized = action.right_size
            return (
                f"right-size {ws.ref.kind} {ws.ref.name} from {ws.replicas} to {sized.keep}, "
                f"removing its idle pods {', '.join(sized.remove)}"
            )
        if ws.action is ActionKind.POD:
            return "delete the bare pod"
        if ws.action in (ActionKind.SCALE, ActionKind.SCALE_SUBRESOURCE):
            return f"scale {ws.ref.kind} {ws.ref.name} from {ws.replicas} to 0"
        return _PENDING.get(ws.action, "reclaim") + f" {ws.ref.kind} {ws.ref.name}"

    # ---------------------------------------------------------------- steps
    def _path(self, ws: WorkloadState) -> str:
        return self.reader.path(ws.ref)

    def _annotate(self, action: PlannedAction, ws: WorkloadState, now: float) -> None:
        annotations: dict[str, Any] = {
            Annotations.FLAGGED_AT: rfc3339(now),
            Annotations.EPISODE: action.episode,
            Annotations.RULE: action.alert_labels.get("alertname", ""),
            Annotations.EVIDENCE: action.reason[:250],
        }
        if action.next_step is LadderStep.RECLAIM and action.next_step_due is not None:
            annotations[Annotations.PENDING_ACTION] = _PENDING.get(ws.action, "none")
            annotations[Annotations.PENDING_ACTION_AT] = rfc3339(action.next_step_due)
        patch = {"metadata": {"resourceVersion": ws.resource_version, "annotations": annotations}}
        self.rest.merge_patch(self._path(ws), patch)

    def _request_checkpoint(self, action: PlannedAction, ws: WorkloadState, now: float) -> None:
        annotations = {
            # Written at the precision the planner compares the acknowledgement at.
            Annotations.RECLAIM_REQUESTED_AT: annotation_time(now),
            Annotations.EPISODE: action.episode,
        }
        patch = {"metadata": {"resourceVersion": ws.resource_version, "annotations": annotations}}
        self.rest.merge_patch(self._path(ws), patch)

    def _reclaim_annotations(self, action: PlannedAction, ws: WorkloadState, now: float) -> Obj:
        annotations: Obj = {
            Annotations.RECLAIMED_AT: rfc3339(now),
            Annotations.RECLAIMED_BY: action.policy,
            Annotations.REASON: action.reason[:250],
            Annotations.EPISODE: action.episode,
            Annotations.PENDING_ACTION: None,
            Annotations.PENDING_ACTION_AT: None,
        }
        if ws.replicas is not None:
            annotations[Annotations.ORIGINAL_REPLICAS] = str(ws.replicas)
        if ws.hpa is not None and action.hpa_record:
            annotations[Annotations.HPA] = ws.hpa.name
            if ws.hpa.min_replicas is not None:
                annotations[Annotations.ORIGINAL_MIN_REPLICAS] = str(ws.hpa.min_replicas)
        return annotations

    def _right_size(self, action: PlannedAction, ws: WorkloadState, now: float) -> None:
        """Mark the idle pods to go first, then scale to the busy count in one conditional
        write with the record of what it was (restore scales back)."""
        sized = action.right_size
        if sized is None or ws.action is not ActionKind.SCALE:
            raise PermanentError(f"{ws.ref.kind} cannot be right-sized")
        if sized.cost is not None:
            for pod in sized.remove:
                cost = {Annotations.POD_DELETION_COST: str(sized.cost)}
                path = object_path("v1", "pods", ws.ref.namespace, pod)
                self.rest.merge_patch(path, {"metadata": {"annotations": cost}})
        annotations = self._reclaim_annotations(action, ws, now)
        annotations[Annotations.RIGHT_SIZED_TO] = str(sized.keep)
        annotations[Annotations.RIGHT_SIZED_PODS] = ",".join(sized.remove)
        meta = {"resourceVersion": ws.resource_version, "annotations": annotations}
        self.rest.merge_patch(self._path(ws), {"metadata": meta, "spec": {"replicas": sized.keep}})

    def _reclaim(self, action: PlannedAction, ws: WorkloadState, now: float) -> None:
        if action.right_size is not None:
            self._right_size(action, ws, now)
            return
        annotations = self._reclaim_annotations(action, ws, now)
        meta = {"resourceVersion": ws.resource_version, "annotations": annotations}
        path = self._path(ws)
        if ws.action is ActionKind.SCALE:
            # One conditional write: the scale and the record of what it was.
            self.rest.merge_patch(path, {"metadata": meta, "spec": {"replicas": 0}})
        elif ws.action is ActionKind.SCALE_SUBRESOURCE:
            updated = self.rest.merge_patch(path, {"metadata": meta})
            self._put_scale(ws, path, updated["metadata"]["resourceVersion"], 0)
        elif ws.action is ActionKind.SUSPEND:
            if ws.jobs:
                annotations[Annotations.SUSPENDED_JOBS] = ",".join(ws.jobs)
            self.rest.merge_patch(path, {"metadata": meta, "spec": {"suspend": True}})
            for job in ws.jobs:  # a CronJob's suspend stops future runs only
                self._suspend_job(ws.ref.namespace, job, suspend=True)
        elif ws.action is ActionKind.NOTEBOOK:
            annotations[NOTEBOOK_STOPPED] = rfc3339(now)
            self.rest.merge_patch(path, {"metadata": meta})
        elif ws.action is ActionKind.POD and action.delete_pod:
            self.rest.delete(path, {"uid": ws.uid, "resourceVersion": ws.resource_version})
        else:
            raise ValueError(f"{ws.ref.kind} cannot be reclaimed")

    def _put_scale(
        self, ws: WorkloadState, path: str, resource_version: str, replicas: int
    ) -> None:
        scale = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": ws.ref.name,
                "namespace": ws.ref.namespace,
                "resourceVersion": resource_version,
            },
            "spec": {"replicas": replicas},
        }
        self.rest.replace(path + "/scale", scale)

    def _suspend_job(self, namespace: str, job: str, *, suspend: bool) -> None:
        path = object_path("batch/v1", "jobs", namespace, job)
        try:
            self.rest.merge_patch(path, {"spec": {"suspend": suspend}})
        except Exception as exc:  # per item: the CronJob itself is already handled
            logger.warning("job %s/%s: could not set suspend=%s: %s", namespace, job, suspend, exc)

    def restore(self, ws: WorkloadState, now: float) -> str:
        """Undo a reclaim on ``ws`` (as just read): exact replicas, unsuspend, clear our marks.

        Returns what was done. A replica count a human already changed is left alone.
        """
        ann = ws.annotations
        cleared: Obj = dict.fromkeys((*Annotations.RECLAIM_KEYS, *Annotations.FLAG_KEYS))
        cleared[Annotations.RESTORED_AT] = rfc3339(now)  # restarts the warm-up clock
        meta = {"resourceVersion": ws.resource_version, "annotations": cleared}
        spec: Obj = {}
        done = "cleared annotations"
        original = original_replicas(ws)
        path = self.reader.path(ws.ref)
        if ws.action is ActionKind.SCALE and original is not None:
            if ws.replicas == _reclaimed_count(ws):
                spec["replicas"] = original
                done = f"scaled back to {original}"
            else:
                left = "unknown replicas" if ws.replicas is None else plural(ws.replicas, "replica")
                done = f"left at {left} (changed since the reclaim)"
        elif ws.action is ActionKind.SUSPEND:
            spec["suspend"] = False
            done = "unsuspended"
            for job in filter(None, ann.get(Annotations.SUSPENDED_JOBS, "").split(",")):
                self._suspend_job(ws.ref.namespace, job, suspend=False)
        elif ws.action is ActionKind.NOTEBOOK:
            cleared[NOTEBOOK_STOPPED] = None
            done = "notebook started"
        body: Obj = {"metadata": meta}
        if spec:
            body["spec"] = spec
        updated = self.rest.merge_patch(path, body)
        scaled = ws.action is ActionKind.SCALE_SUBRESOURCE and ws.replicas == 0
        if scaled and original is not None:
            self._put_scale(ws, path, updated["metadata"]["resourceVersion"], original)
            done = f"scaled back to {original}"
        hpa_name, hpa_min = ann.get(Annotations.HPA), ann.get(Annotations.ORIGINAL_MIN_REPLICAS)
        current = ws.hpa.min_replicas if ws.hpa is not None else None
        if hpa_name and hpa_min and hpa_min.isdigit() and current != int(hpa_min):
            hpa_path = object_path(
                "autoscaling/v2", "horizontalpodautoscalers", ws.ref.namespace, hpa_name
            )
            try:
                self.rest.merge_patch(hpa_path, {"spec": {"minReplicas": int(hpa_min)}})
                done += f"; HPA {hpa_name} minReplicas {hpa_min}"
            except NotFound:  # the workload is back; an HPA deleted since has nothing to undo
                done += f"; HPA {hpa_name} is gone: minReplicas not restored"
        return done
