"""The state a controller keeps in the cluster, as this version writes it: the episode
shards (ConfigMaps gpu-guardian-state-NN), the Slack clicks ConfigMap, and the annotations
a reclaim leaves on workloads. tests/fixtures/state/v1/ holds what it wrote when the
record format was version 1; test_state_compat.py checks that today's controller still
reads it (and still writes it, until the format changes on purpose).

When the format changes: bump episode_store.VERSION, write the new fixture beside the old
one (python -m tests.integration.install.state_fixture tests/fixtures/state/v2), and keep
v1's test: a newer controller must read what an older one wrote (docs/deploy.md,
"Versions: what an upgrade keeps").
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from kubernetes import config

from guardian.adapters.kube.click_store import ClickStore
from guardian.adapters.kube.episode_store import STATE_LABEL, EpisodeStore
from guardian.adapters.kube.rest import KubeRest
from guardian.engine.notify.click_plan import Click
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import (
    EpisodeState,
    InFlight,
    Outage,
    SharedEpisode,
    SlackParent,
    StepMark,
)
from testbed.kubeapi import FakeKubeAPI
from tests.plugins.kube_fixture import LWS, NAMESPACES

from .reclaimed import T0, reclaim_fleet

REPO = Path(__file__).resolve().parents[3]
V1 = REPO / "tests" / "fixtures" / "state" / "v1"
NS = "gpu-guardian"
TRAIN = WorkloadRef("apps/v1", "Deployment", "ml", "train")
NIGHTLY = WorkloadRef("batch/v1", "CronJob", "ml", "nightly")
BY = "gpu-guardian-controller-6f7c9-abcde"


def _mark(step: LadderStep, at: float) -> StepMark:
    return StepMark(step, StepOutcome.APPLIED, at, BY)


def episodes() -> list[SharedEpisode]:
    """One record of each shape a controller writes: reclaimed with its Slack parent, in
    flight and held, laddering in observe mode, closed."""
    alert = LabelSet({"alertname": "GpuIdle", "namespace": "ml", "pod": "train-abc-1"})
    slack = SlackParent(
        thread="GpuIdle/ml/train",
        channel="#gpu-alerts",
        channel_id="C0123ABCD",
        ts="1700000000.000100",
        alert_episode="a-1",
        finding={"title": "train idle", "gpus": 2},
    )
    return [
        SharedEpisode(
            episode="ep-reclaimed",
            workload=TRAIN,
            policy="reclaim-idle-gpus",
            started_at=T0,
            state=EpisodeState.RECLAIMED,
            alert_labels=alert,
            updated_at=T0 + 3600,
            steps=(
                _mark(LadderStep.NOTIFY, T0),
                _mark(LadderStep.ANNOTATE, T0 + 60),
                _mark(LadderStep.RECLAIM, T0 + 3600),
            ),
            original_replicas=3,
            slack=slack,
        ),
        SharedEpisode(
            episode="ep-inflight",
            workload=NIGHTLY,
            policy="reclaim-idle-gpus",
            started_at=T0 + 10,
            state=EpisodeState.OPEN,
            alert_labels=LabelSet({"alertname": "GpuIdle", "namespace": "ml"}),
            updated_at=T0 + 120.5,
            steps=(_mark(LadderStep.NOTIFY, T0 + 10),),
            inflight=InFlight(LadderStep.ANNOTATE, 2, T0 + 120.5, BY),
            next_step=LadderStep.RECLAIM,
            next_step_due=T0 + 3610,
            planned="reclaim due at 2023-11-15T00:13:30Z",
            hold=HoldKind.OUTAGE,
            outage=Outage(T0 + 100, None),
        ),
        SharedEpisode(
            episode="ep-observed",
            workload=WorkloadRef("kubeflow.org/v1", "Notebook", "research", "nb"),
            policy="observe-everything",
            started_at=T0 + 20,
            state=EpisodeState.OPEN,
            alert_labels=LabelSet({"alertname": "GpuIdle"}),
            updated_at=T0 + 20,
            steps=(StepMark(LadderStep.NOTIFY, StepOutcome.DRY_RUN, T0 + 20, BY),),
            next_step=LadderStep.RECLAIM,
            next_step_due=None,
            hold=HoldKind.GRACE,
        ),
        SharedEpisode(
            episode="ep-closed",
            workload=WorkloadRef("apps/v1", "StatefulSet", "ml", "serve"),
            policy="reclaim-idle-gpus",
            started_at=T0 + 30,
            state=EpisodeState.CLOSED,
            alert_labels=LabelSet({"alertname": "GpuIdle"}),
            updated_at=T0 + 90,
            ended_at=T0 + 90,
            steps=(_mark(LadderStep.NOTIFY, T0 + 30),),
        ),
    ]


CLICK = Click(
    "gpu_guardian_keep_24h",
    "ep-reclaimed",
    "U024BE7LH",
    "C0123ABCD",
    "1700000000.000100",
    T0 + 5.25,
)
PENDING_CLICK = Click(
    "gpu_guardian_reclaim_now",
    "ep-inflight",
    "U024BE7LH",
    "C0123ABCD",
    "1700000010.000200",
    T0 + 7.5,
)


def write_state(api: FakeKubeAPI, api_client: Any) -> dict[str, Any]:
    """Write every kind of state through today's stores and executor; return it as the
    API holds it (what the fixture keeps)."""
    rest = KubeRest(api_client)
    store = EpisodeStore(rest, NS)
    for record in episodes():
        store.update(record.episode, lambda _current, r=record: r, T0 + 3600)
    clicks = ClickStore(rest, NS)
    clicks.record(CLICK, T0 + 6)
    clicks.finish(CLICK, T0 + 8, "kept until 2023-11-15T22:13:25Z")
    clicks.record(PENDING_CLICK, T0 + 8)
    reclaim_fleet(api, api_client)
    shards = {
        o["metadata"]["name"]: o["data"]
        for o in api.objects("ConfigMap", NS)
        if (o["metadata"].get("labels") or {}).get(STATE_LABEL) == "episodes"
    }
    workloads = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "spec": {k: v for k, v in o["spec"].items() if k in ("replicas", "suspend")},
            "annotations": o["metadata"].get("annotations") or {},
        }
        for kind in ("Deployment", "StatefulSet", "CronJob", "Job", "Notebook")
        for o in api.objects(kind, "ml")
        if o["metadata"].get("annotations") or kind == "Job"  # a CronJob's Job: suspended
    ]
    return {
        "shards": dict(sorted(shards.items())),
        "clicks": api.get("ConfigMap", "gpu-guardian-clicks", NS)["data"],
        "workloads": workloads,
    }


def current_state() -> dict[str, Any]:
    """What today's code writes, in a fresh fake cluster."""
    with (
        FakeKubeAPI.start(namespaces=NAMESPACES, extra_resources=(LWS,)) as api,
        tempfile.TemporaryDirectory() as tmp,
    ):
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        client = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            return write_state(api, client)
        finally:
            client.close()


def dump(state: dict[str, Any]) -> dict[str, str]:
    return {
        f"{key}.json": json.dumps(value, indent=2, sort_keys=True) + "\n"
        for key, value in state.items()
    }


def load(directory: Path) -> dict[str, Any]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))
    }


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else V1
    target.mkdir(parents=True, exist_ok=True)
    for name, text in dump(current_state()).items():
        (target / name).write_text(text, encoding="utf-8")
