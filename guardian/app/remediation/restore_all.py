"""``guardian restore --all``: every workload this cluster's controller reclaimed, restored,
one line each; with ``remove_annotations`` (an uninstall), every annotation of ours cleared
afterwards, from workloads, bare pods and namespaces, so nothing is left behind.

The cluster is read, not the controller's state (adapters/kube/marks.py): the annotations
are the record. Each restore is ``guardian restore``'s own (restore.py: exact replicas,
unsuspend, the notebook started, the HPA's minimum back). A dry run changes nothing and
says what would change. The controller should be stopped first, or it may reclaim again;
a Lease renewed lately says it is not, and the caller is told.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from guardian.adapters.kube.executor import original_replicas
from guardian.adapters.kube.marks import Marked, find_marked, ours
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import Conflict, KubeRest, NotFound, object_path
from guardian.app.remediation.restore import RestoreRequest, restore_clients, restore_workload
from guardian.app.remediation.step_runner import StepRunner
from guardian.app.settings.config_file import load_settings
from guardian.model.policies import Annotations
from guardian.model.reclaim import ActionKind, WorkloadState
from guardian.model.remediation_events import WorkloadRef
from guardian.model.times import parse_rfc3339
from guardian_common.errors import GuardianError
from guardian_common.words import plural

WHO = "guardian restore --all"
_ATTEMPTS = 3


@dataclass(frozen=True)
class Line:
    """What happened to one object: printed as ``ref: message``."""

    ref: WorkloadRef
    message: str
    failed: bool = False

    def __str__(self) -> str:
        ref = self.ref
        where = f"Namespace/{ref.name}" if ref.kind == "Namespace" else str(ref)
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Outcome:
    lines: list[Line]
    left: int  # objects still carrying annotations of ours (without remove_annotations)

    @property
    def failed(self) -> bool:
        return any(line.failed for line in self.lines)


def _count(n: int) -> str:
    return f"{n} annotation" + ("" if n == 1 else "s")


def clear_annotations(
    rest: KubeRest, reader: KubeReader, ref: WorkloadRef, *, dry_run: bool
) -> str:
    """Remove every annotation of ours from ``ref``, read just before (a conditional
    write: on a conflict, read again). Returns what was (or would be) done."""
    if ref.kind == "Namespace":
        path = object_path("v1", "namespaces", None, ref.name)
    else:
        path = reader.path(ref)
    for _ in range(_ATTEMPTS):
        meta = rest.get(path).get("metadata") or {}
        keys = ours({str(k): str(v) for k, v in (meta.get("annotations") or {}).items()})
        if not keys:
            return "no annotations of ours"
        if dry_run:
            return f"would remove {_count(len(keys))}: {', '.join(keys)}"
        body = {"resourceVersion": meta.get("resourceVersion"), "annotations": dict.fromkeys(keys)}
        try:
            rest.merge_patch(path, {"metadata": body})
        except Conflict:
            continue
        return f"removed {_count(len(keys))}"
    raise GuardianError(f"{path} kept changing; run it again")


def preview(ws: WorkloadState) -> str:
    """What restoring ``ws`` (as read now) would do, for a dry run."""
    ann = ws.annotations
    when = ann.get(Annotations.RECLAIMED_AT, "?")
    by = ann.get(Annotations.RECLAIMED_BY, "?")
    original = original_replicas(ws)
    if ws.action in (ActionKind.SCALE, ActionKind.SCALE_SUBRESOURCE) and original is not None:
        kept = ann.get(Annotations.RIGHT_SIZED_TO, "0")
        if str(ws.replicas) == kept:
            what = f"would scale back from {ws.replicas} to {original}"
        else:
            left = "unknown replicas" if ws.replicas is None else plural(ws.replicas, "replica")
            what = f"would leave it at {left} (changed since the reclaim)"
    elif ws.action is ActionKind.SUSPEND:
        what = "would unsuspend it"
    elif ws.action is ActionKind.NOTEBOOK:
        what = "would start the notebook"
    else:
        what = "would clear its annotations"
    return f"{what} (reclaimed at {when} by {by})"


def _restore_one(
    marked: Marked,
    restore: Callable[[WorkloadRef], str],
    clear: Callable[[WorkloadRef], str] | None,
    gone: Callable[[WorkloadRef], bool],
) -> Line:
    try:
        message = restore(marked.ref) if marked.reclaimed else ""
        if clear is not None:
            cleared = clear(marked.ref)
            if marked.reclaimed and cleared.startswith("would remove"):
                cleared = "would remove its annotations"
            message = f"{message}; {cleared}" if message else cleared
    except NotFound as exc:
        if gone(marked.ref):
            return Line(marked.ref, "gone (deleted meanwhile)")
        return Line(marked.ref, f"failed: {exc}", failed=True)
    except GuardianError as exc:
        return Line(marked.ref, f"failed: {exc}", failed=True)
    return Line(marked.ref, message)


def restore_all(
    rest: KubeRest,
    reader: KubeReader,
    steps: StepRunner,
    now: float,
    *,
    dry_run: bool = False,
    remove_annotations: bool = False,
) -> Outcome:
    """Restore every reclaimed workload (and clear every annotation of ours, if asked)."""
    marked = find_marked(rest, namespaces=remove_annotations)

    def restore(ref: WorkloadRef) -> str:
        done = restore_workload(ref, reader, steps, now, dry_run=dry_run, who=WHO)
        return preview(reader.workload(ref)) if dry_run else done

    def clear(ref: WorkloadRef) -> str:
        return clear_annotations(rest, reader, ref, dry_run=dry_run)

    def gone(ref: WorkloadRef) -> bool:
        try:
            clear_path = object_path("v1", "namespaces", None, ref.name)
            rest.get(clear_path if ref.kind == "Namespace" else reader.path(ref))
        except NotFound:
            return True
        return False

    chosen = marked if remove_annotations else [m for m in marked if m.reclaimed]
    wipe = clear if remove_annotations else None
    lines = [_restore_one(m, restore, wipe, gone) for m in chosen]
    return Outcome(lines, left=0 if remove_annotations else len(marked) - len(chosen))


def controller_running(
    rest: KubeRest, namespace: str, lease: str, now: float, within: float = 60.0
) -> str | None:
    """Who holds the controller's Lease, if it was renewed in the last ``within`` seconds
    (the controller still runs, and may reclaim again); else None."""
    try:
        obj = rest.get(object_path("coordination.k8s.io/v1", "leases", namespace, lease))
    except (NotFound, GuardianError):
        return None
    spec = obj.get("spec") or {}
    renewed = parse_rfc3339(spec.get("renewTime"))
    holder = str(spec.get("holderIdentity") or "")
    if holder and renewed is not None and now - renewed < within:
        return f"{holder}, renewed {max(0, round(now - renewed))} s ago"
    return None


def summary(outcome: Outcome, *, dry_run: bool) -> Sequence[str]:
    """The lines for stderr after the per-workload ones."""
    restored = sum(1 for line in outcome.lines if not line.failed)
    out: list[str] = []
    if not outcome.lines:
        out.append("nothing to restore")
    elif dry_run:
        out.append(f"dry run: nothing changed ({len(outcome.lines)} to do)")
    else:
        out.append(f"{restored} done, {len(outcome.lines) - restored} failed")
    if outcome.left:
        out.append(
            f"{outcome.left} other objects carry gpu-guardian.io annotations "
            "(--remove-annotations clears them)"
        )
    return out


def _lease(request: RestoreRequest, env: Mapping[str, str]) -> tuple[str, str]:
    """(namespace, name) of the controller's Lease: the --config's, else the manifests'."""
    if not request.config:
        return "gpu-guardian", "gpu-guardian"
    remediation = load_settings(request.config, env).remediation
    election = remediation.leader_election
    return election.lease_namespace or remediation.controller_namespace, election.lease_name


def run_restore_all(
    request: RestoreRequest, env: Mapping[str, str], now: float, *, remove_annotations: bool
) -> tuple[Outcome, str | None]:
    """Build the clients, restore everything, close them: (the outcome, who holds the
    controller's Lease if it still runs)."""
    namespace, lease = _lease(request, env)
    with restore_clients(request, env) as (rest, reader, steps):
        running = controller_running(rest, namespace, lease, now)
        outcome = restore_all(
            rest,
            reader,
            steps,
            now,
            dry_run=request.dry_run,
            remove_annotations=remove_annotations,
        )
    return outcome, running
