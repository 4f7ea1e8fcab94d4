"""A cluster after an enforcing controller ran: workloads of every kind reclaimed, one
flagged and not yet reclaimed, a bare pod flagged, a workload snoozed from Slack, a
namespace opted out. Every mark is written by today's executor (no hand-written
annotations), so the tests that read them read what the controller writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardian.adapters.kube.executor import Executor, Hold
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.model.labels import LabelSet
from guardian.model.policies import PREFIX, Annotations
from guardian.model.reclaim import PlannedAction
from guardian.model.remediation_events import LadderStep, WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

T0 = 1_700_000_000.0
NS = "ml"
TRAIN = WorkloadRef("apps/v1", "Deployment", NS, "train")
SERVE = WorkloadRef("apps/v1", "StatefulSet", NS, "serve")
NIGHTLY = WorkloadRef("batch/v1", "CronJob", NS, "nightly")
NOTEBOOK = WorkloadRef("kubeflow.org/v1", "Notebook", NS, "nb")
FLAGGED = WorkloadRef("apps/v1", "Deployment", NS, "flagged")
SNOOZED = WorkloadRef("apps/v1", "Deployment", NS, "snoozed")
BARE = WorkloadRef("v1", "Pod", NS, "lonely")
RECLAIMED = (TRAIN, SERVE, NIGHTLY, NOTEBOOK)
# Someone else's annotations, which nothing of ours may touch.
THEIRS = {"example.com/owner": "team-a", "deployment.kubernetes.io/revision": "1"}


@dataclass(frozen=True)
class Before:
    """What the workloads were before the reclaims: replicas, suspend, HPA minimum."""

    train_replicas: int = 3
    serve_replicas: int = 2
    hpa_min: int = 2


def _action(ref: WorkloadRef, step: LadderStep, **extra: Any) -> PlannedAction:
    return PlannedAction(
        workload=ref,
        step=step,
        policy="reclaim-idle-gpus",
        episode=f"ep-{ref.name}",
        reason="GpuIdle firing for 30m",
        dry_run=False,
        alert_labels=LabelSet({"alertname": "GpuIdle"}),
        **extra,
    )


def _seed(kube: FakeKubeAPI, before: Before) -> None:
    kube.create(b.namespace(NS, annotations={PREFIX + "exclude-until": "2020-01-01T00:00:00Z"}))
    dep = kube.create(b.deployment("train", NS, replicas=before.train_replicas))
    kube.patch("Deployment", "train", {"metadata": {"annotations": THEIRS}}, NS)
    kube.create(b.hpa(dep, min_replicas=before.hpa_min, max_replicas=6))
    kube.create(b.statefulset("serve", NS, replicas=before.serve_replicas))
    cron = kube.create(b.cronjob("nightly", NS))
    job = kube.create(b.job("nightly-1", NS, owners=[b.owner_reference(cron)]))
    kube.create(b.pod("nightly-1-x", NS, owners=[b.owner_reference(job)]))
    nb = kube.create(b.notebook("nb", NS))
    sts = kube.create(b.statefulset("nb", NS, owners=[b.owner_reference(nb)]))
    kube.create(b.pod("nb-0", NS, owners=[b.owner_reference(sts)]))
    kube.create(b.deployment("flagged", NS, replicas=1))
    kube.create(b.deployment("snoozed", NS, replicas=1))
    kube.create(b.pod("lonely", NS, node="n1"))
    kube.create(b.deployment("untouched", NS, replicas=2))


def reclaim_fleet(kube: FakeKubeAPI, api_client: Any, before: Before = Before()) -> None:
    """Seed the workloads and run today's executor on them, as an enforcing controller."""
    _seed(kube, before)
    rest = KubeRest(api_client)
    reader = KubeReader(rest)
    executor = Executor(rest, reader)
    for ref in RECLAIMED:
        jobs = ["nightly-1"] if ref == NIGHTLY else []
        executor.apply(_action(ref, LadderStep.ANNOTATE), reader.workload(ref, jobs=jobs), T0)
        ws = reader.workload(ref, jobs=jobs)
        executor.apply(_action(ref, LadderStep.RECLAIM, hpa_record=True), ws, T0 + 3600)
    for ref in (FLAGGED, BARE):
        due = {"next_step": LadderStep.RECLAIM, "next_step_due": T0 + 7200}
        executor.apply(_action(ref, LadderStep.ANNOTATE, **due), reader.workload(ref), T0)
    snooze = Hold({Annotations.SNOOZE_UNTIL: "2030-01-01T00:00:00Z"}, "GPUIdleKept", "kept", "e")
    executor.hold(reader.workload(SNOOZED), snooze, T0)


def our_annotations(kube: FakeKubeAPI) -> dict[str, list[str]]:
    """Every object with an annotation of ours (and a notebook stopped by us), by kind/name."""
    found: dict[str, list[str]] = {}
    kinds = ("Namespace", "Deployment", "StatefulSet", "CronJob", "Job", "Notebook", "Pod")
    for kind in kinds:
        for obj in kube.objects(kind):
            keys = sorted(
                k
                for k in (obj["metadata"].get("annotations") or {})
                if k.startswith(PREFIX) or k == "kubeflow-resource-stopped"
            )
            if keys:
                found[f"{kind}/{obj['metadata']['name']}"] = keys
    return found
