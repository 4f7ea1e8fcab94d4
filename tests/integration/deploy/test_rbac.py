"""The RBAC grants exactly the calls the code makes: no more, no less, no delete, no wildcard.

The real adapters (owner resolution, the executor on every kind of root, Events, leader
election, the exporter's pod watch) run against the fake API server through the real
`kubernetes` client. Every request it records is checked against the built Roles and
ClusterRoles bound to the component's ServiceAccount, the way the API server's RBAC
authorizer decides; then every granted (group, resource, verb) must have been used.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from exporter.adapters.kube_cluster import read_cluster_uid
from exporter.adapters.kube_pods import PodWatcher
from guardian.adapters.kube.click_store import NAME as CLICKS
from guardian.adapters.kube.click_store import ClickStore
from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.executor import Executor, Hold
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.leader import LeaseElector, LeaseTiming
from guardian.app.remediation.pending_pods import PendingPods
from guardian.app.remediation.policy_objects import PolicyObjects
from guardian.app.settings.remediation import SharedStateSettings
from guardian.engine.notify.click_plan import Click
from guardian.model.labels import LabelSet
from guardian.model.policies_crd import crds
from guardian.model.reclaim import ActionKind, PendingPod, Plan, PlannedAction
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import EpisodeState
from testbed.kubeapi import FakeKubeAPI, ResourceType, ScaleSpec
from testbed.kubeapi import builders as b
from tests.plugins.kube_fixture import LWS, ManualClock

from .conftest import Build, Obj

NS = "gpu-guardian"
NOW = 1_700_000_000.0
ROLLOUT = ResourceType(
    "argoproj.io",
    "v1alpha1",
    "Rollout",
    "rollouts",
    scale=ScaleSpec(label_selector="status.selector"),
)
MUTATING = {"create", "update", "patch", "delete", "deletecollection"}
NODE = ResourceType("", "v1", "Node", "nodes", namespaced=False)


@dataclass(frozen=True)
class Access:
    """The RBAC attributes of one request."""

    group: str
    resource: str  # with "/subresource"
    verb: str
    namespace: str | None
    name: str

    @classmethod
    def of(cls, path: str, verb: str) -> Access | None:
        """None for discovery paths, which system:discovery grants to everyone."""
        parts = path.strip("/").split("/")
        group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
        if not rest:
            return None
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
        return cls(group, resource, verb, namespace, rest[1] if len(rest) > 1 else "")


@dataclass(frozen=True)
class Grant:
    rule: Obj
    namespace: str | None  # a Role's namespace; None for a ClusterRole

    def allows(self, a: Access) -> bool:
        r = self.rule
        return (
            (self.namespace is None or a.namespace == self.namespace)
            and a.group in r.get("apiGroups", [])
            and a.resource in r.get("resources", [])
            and a.verb in r["verbs"]
            and (not r.get("resourceNames") or a.name in r["resourceNames"])
        )


def grants(build: Build, service_account: str) -> list[Grant]:
    """The rules bound to ``service_account`` in the gpu-guardian namespace."""
    out: list[Grant] = []
    for binding in build.of_kind("ClusterRoleBinding") + build.of_kind("RoleBinding"):
        subjects = binding.get("subjects", [])
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == service_account and s["namespace"] == NS
            for s in subjects
        ):
            continue
        ref = binding["roleRef"]
        role = build.one(ref["kind"], ref["name"])
        scope = (
            None if binding["kind"] == "ClusterRoleBinding" else binding["metadata"]["namespace"]
        )
        out += [Grant(rule, scope) for rule in role["rules"]]
    return out


def check(accesses: list[Access], granted: list[Grant]) -> None:
    denied = [a for a in accesses if not any(g.allows(a) for g in granted)]
    assert not denied, f"calls the RBAC would refuse: {denied}"
    used = {(a.group, a.resource, a.verb) for a in accesses}
    unused = sorted(
        (group, resource, verb)
        for g in granted
        for group in g.rule["apiGroups"]
        for resource in g.rule["resources"]
        for verb in g.rule["verbs"]
        if (group, resource, verb) not in used
    )
    assert not unused, f"granted but never used by the code: {unused}"


def test_no_delete_and_no_wildcards(builds: dict[str, Build]) -> None:
    for build in builds.values():
        for role in build.of_kind("ClusterRole") + build.of_kind("Role"):
            for rule in role["rules"]:
                assert not {"delete", "deletecollection", "escalate", "bind", "impersonate"} & set(
                    rule["verbs"]
                ), role["metadata"]["name"]
                for key in ("verbs", "resources", "apiGroups", "resourceNames"):
                    assert all("*" not in v for v in rule.get(key, [])), (role, key)
                assert "nonResourceURLs" not in rule


def _action(ref: WorkloadRef, step: LadderStep, **extra: Any) -> PlannedAction:
    return PlannedAction(
        workload=ref,
        step=step,
        policy="reclaim-idle-gpus",
        episode="ep1",
        reason="GpuIdle firing",
        dry_run=False,
        alert_labels=LabelSet({"alertname": "GpuIdle"}),
        **extra,
    )


def _seed(kube: FakeKubeAPI) -> list[tuple[str, str]]:
    """One root of every kind the controller knows, each with a GPU pod; the pods."""
    dep = kube.create(b.deployment("train", "ml", replicas=2))
    rs = kube.create(b.replicaset("train-abc", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-abc-1", "ml", owners=[b.owner_reference(rs)]))
    kube.create(b.hpa(dep, min_replicas=2, max_replicas=4))
    bare_rs = kube.create(b.replicaset("batch", "ml"))
    kube.create(b.pod("batch-1", "ml", owners=[b.owner_reference(bare_rs)]))
    sts = kube.create(b.statefulset("db", "ml"))
    kube.create(b.pod("db-0", "ml", owners=[b.owner_reference(sts)]))
    cj = kube.create(b.cronjob("nightly", "ml"))
    job = kube.create(b.job("nightly-1", "ml", owners=[b.owner_reference(cj)]))
    kube.create(b.pod("nightly-1-x", "ml", owners=[b.owner_reference(job)]))
    once = kube.create(b.job("finetune", "ml"))
    kube.create(b.pod("finetune-x", "ml", owners=[b.owner_reference(once)]))
    nb = kube.create(b.notebook("nb", "ml"))
    nb_sts = kube.create(b.statefulset("nb", "ml", owners=[b.owner_reference(nb)]))
    kube.create(b.pod("nb-0", "ml", owners=[b.owner_reference(nb_sts)]))
    for rt, name, selector in ((LWS, "serve", "hpaPodSelector"), (ROLLOUT, "web", "selector")):
        root = kube.create(
            {
                "apiVersion": rt.api_version,
                "kind": rt.kind,
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {"replicas": 2},
                "status": {"replicas": 2, selector: f"app={name}"},
            }
        )
        child = kube.create(b.statefulset(f"{name}-0", "ml", owners=[b.owner_reference(root)]))
        kube.create(b.pod(f"{name}-0-0", "ml", owners=[b.owner_reference(child)]))
    kube.create(b.pod("lonely", "ml"))
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in kube.objects("Pod", "ml")]


@pytest.fixture
def kube_clock() -> ManualClock:
    return ManualClock(datetime.fromtimestamp(NOW - 86_400, tz=UTC))


@pytest.fixture
def kube_resources() -> Sequence[ResourceType]:
    return (LWS, ROLLOUT, NODE)


def _accesses(kube: FakeKubeAPI) -> list[Access]:
    found = [Access.of(r.path, r.verb) for r in kube.requests()]
    return [a for a in found if a is not None]


@pytest.mark.e2e
def test_controller_rbac_is_exactly_what_the_controller_calls(
    kube: FakeKubeAPI, api_client: Any, builds: dict[str, Build]
) -> None:
    pods = _seed(kube)
    rest = KubeRest(api_client, timeout=5.0)
    reader = KubeReader(rest)
    executor = Executor(rest, reader, instance="gpu-guardian-0")
    assert reader.namespace_uid("kube-system")  # this cluster's UID, read at start-up
    snapshot = reader.snapshot(pods, [], NS)
    assert not snapshot.errors
    roots = {ws.action for ws in snapshot.workloads.values()}
    assert roots >= {
        ActionKind.SCALE,
        ActionKind.SUSPEND,
        ActionKind.NOTEBOOK,
        ActionKind.SCALE_SUBRESOURCE,
        ActionKind.POD,
    }
    for ref, seen in snapshot.workloads.items():
        ws = reader.workload(ref)
        executor.apply(_action(ref, LadderStep.NOTIFY), ws, NOW)
        ws = reader.workload(ref)
        executor.apply(_action(ref, LadderStep.ANNOTATE), ws, NOW + 60)
        if ws.action is ActionKind.POD:  # annotate and notify only: no delete is granted
            executor.unflag(reader.workload(ref))
            continue
        if ws.action is ActionKind.NONE:
            continue
        ws = reader.workload(ref, seen.pods, seen.jobs)  # a CronJob's running Jobs too
        executor.apply(_action(ref, LadderStep.RECLAIM, hpa_record=True), ws, NOW + 3600)
        if ref.kind == "Deployment":  # someone lowered the HPA: the restore sets it back
            kube.patch("HorizontalPodAutoscaler", "train", {"spec": {"minReplicas": 1}}, "ml")
        executor.apply(_action(ref, LadderStep.RESTORE), reader.workload(ref), NOW + 7200)
    # A second episode bumps each Event instead of creating another.
    for ref in snapshot.workloads:
        action = _action(ref, LadderStep.NOTIFY)
        executor.apply(
            PlannedAction(**{**_fields(action), "episode": "ep2"}), reader.workload(ref), NOW + 9000
        )
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 2

    # Leader election as `guardian run` does it: acquire (create), renew, release on stop.
    elector = LeaseElector(rest, NS, "gpu-guardian", "a", LeaseTiming(retry_period=0.05))
    started, stop = threading.Event(), threading.Event()
    thread = threading.Thread(target=elector.run, args=(started.set, lambda: None, stop))
    thread.start()
    try:
        assert started.wait(5)
        time.sleep(0.2)  # a few renewals
    finally:
        stop.set()
        thread.join(5)
    assert kube.get("Lease", "gpu-guardian", NS)["spec"]["holderIdentity"] == ""

    # The shared episode state as the leader keeps it: read every shard, create one,
    # replace it with a compare-and-swap.
    journal = EpisodeJournal(EpisodeStore(rest, NS), "a")
    journal.refresh()
    ref = WorkloadRef("apps/v1", "Deployment", "ml", "train")
    notify = _action(ref, LadderStep.NOTIFY)
    journal.claim(notify, NOW, NOW)
    journal.settle(notify, StepOutcome.APPLIED, NOW)
    journal.end("ep1", EpisodeState.CLOSED, NOW + 60)
    assert len(kube.objects("ConfigMap", NS)) == 1

    # A Slack click: recorded (create, then compare-and-swap), acted on, marked done.
    clicks = ClickStore(rest, NS)
    click = Click("keep_4h", "ep1", "U0ALICE", "C0ALERTS", "1700000000.000100", NOW)
    assert clicks.record(click, NOW) is None
    hold = Hold(
        {"gpu-guardian.io/snooze-until": "2030-01-01T00:00:00Z"}, "GPUIdleKept", "kept", "ep1"
    )
    executor.hold(reader.workload(ref), hold, NOW)
    clicks.finish(click, NOW, "kept")
    assert len(kube.objects("ConfigMap", NS)) == 2

    _policy_objects_and_pending_pods(kube, api_client, rest)
    _nodes_for_demand(kube, reader)
    check(_accesses(kube), grants(builds["base"], "gpu-guardian-controller"))


def _nodes_for_demand(kube: FakeKubeAPI, reader: KubeReader) -> None:
    """While a GPU pod waits, the node an idle workload runs on is read (get) with the
    pods bound to it (a cluster-wide list by field selector)."""
    kube.create(b.node("gpu-node-1"))
    kube.create(b.pod("on-node", "ml", node="gpu-node-1"))
    snapshot = reader.snapshot([("ml", "on-node")], [], NS)
    waiting = PendingPod("ml", "waiting", {"nvidia.com/gpu": 1}, NOW)
    read = reader.with_nodes(dataclasses.replace(snapshot, pending_pods=(waiting,)))
    assert not read.node_errors
    assert [p.name for p in read.nodes["gpu-node-1"].pods] == ["on-node"]


def _policy_objects_and_pending_pods(kube: FakeKubeAPI, api_client: Any, rest: KubeRest) -> None:
    """Policies as objects (list, watch, get, status patch) and the Pending-pod informer
    (list, watch), as `guardian run` keeps them."""
    for crd in crds():
        kube.create(crd)
    kube.create(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ClusterReclaimPolicy",
            "metadata": {"name": "fleet"},
            "spec": {"delegation": "allow"},
        }
    )
    kube.create(
        {
            "apiVersion": "gpu-guardian.io/v1alpha1",
            "kind": "ReclaimPolicy",
            "metadata": {"name": "team", "namespace": "ml"},
            "spec": {"ladder": {"gracePeriod": "1m"}},  # shorter than the cluster's: rejected
        }
    )
    kube.create(b.pod("waiting", "ml", phase="Pending"))
    objects = PolicyObjects.watching(api_client, 5.0, "gpu-guardian-0")
    pending = PendingPods.watching(api_client, 5.0)
    for informer in [*objects.informers, pending.informer]:
        informer._watch_timeout = 1
        informer.watch_once(informer.relist())
    objects.write_status(rest, Plan(NOW), None, NOW)
    team = kube.get("ReclaimPolicy", "team", "ml", api_version="gpu-guardian.io/v1alpha1")
    assert team["status"]["conditions"][0]["reason"] == "DelegationRejected"
    assert [p.name for p in pending.current() or ()] == ["waiting"]


def test_the_role_names_every_shard_of_the_shared_state(builds: dict[str, Build]) -> None:
    role = builds["base"].one("Role", "gpu-guardian-shared-state")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    (rule,) = named
    shards = EpisodeStore(KubeRest(None), NS, **_shared_state_defaults()).shard_names()
    assert rule["resourceNames"] == [*shards, CLICKS]


def _shared_state_defaults() -> dict[str, Any]:
    defaults = SharedStateSettings()
    return {"prefix": defaults.config_map_prefix, "shards": defaults.shards}


def _fields(action: PlannedAction) -> dict[str, Any]:
    return {name: getattr(action, name) for name in PlannedAction.__dataclass_fields__}


@pytest.mark.e2e
def test_pod_deletion_is_refused_by_the_rbac(
    kube: FakeKubeAPI, api_client: Any, builds: dict[str, Build]
) -> None:
    kube.create(b.pod("lonely", "ml"))
    rest = KubeRest(api_client, timeout=5.0)
    reader = KubeReader(rest)
    ref = WorkloadRef("v1", "Pod", "ml", "lonely")
    kube.clear_requests()
    Executor(rest, reader).apply(
        _action(ref, LadderStep.RECLAIM, delete_pod=True), reader.workload(ref), NOW
    )
    deletes = [a for a in _accesses(kube) if a.verb == "delete"]
    assert deletes
    granted = grants(builds["base"], "gpu-guardian-controller")
    assert not any(g.allows(a) for a in deletes for g in granted)


@pytest.mark.e2e
def test_exporter_rbac_is_exactly_its_pod_watch_and_cluster_uid(
    kube: FakeKubeAPI, api_client: Any, builds: dict[str, Build]
) -> None:
    kube.create(b.pod("train-1", "ml", node="gpu-node-1"))
    watcher = PodWatcher(client.CoreV1Api(api_client), "gpu-node-1", watch_timeout_seconds=1)
    version = watcher.relist()
    watcher.watch_once(version)
    assert watcher.directory().up
    assert read_cluster_uid(client.CoreV1Api(api_client), 5.0)  # kube-system's, once
    accesses = _accesses(kube)
    assert {a.verb for a in accesses} == {"get", "list", "watch"}
    check(accesses, grants(builds["base"], "gpu-guardian-exporter"))


def test_the_checker_refuses_what_is_not_granted() -> None:
    role = Grant({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}, None)
    lease = Grant(
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["gpu-guardian"],
            "verbs": ["get", "update"],
        },
        NS,
    )
    get = Access.of("/apis/apps/v1/namespaces/ml/deployments/x", "get")
    patch = Access.of("/apis/apps/v1/namespaces/ml/deployments/x", "patch")
    scale = Access.of("/apis/apps/v1/namespaces/ml/deployments/x/scale", "get")
    assert get is not None
    assert patch is not None
    assert scale is not None
    assert role.allows(get)
    assert not role.allows(patch)
    assert scale.resource == "deployments/scale"
    assert not role.allows(scale)
    own = Access.of(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/gpu-guardian", "update")
    other = Access.of(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/other", "update")
    elsewhere = Access.of("/apis/coordination.k8s.io/v1/namespaces/ml/leases/gpu-guardian", "get")
    assert own is not None
    assert other is not None
    assert elsewhere is not None
    assert lease.allows(own)
    assert not lease.allows(other)
    assert not lease.allows(elsewhere)
    assert Access.of("/apis/apps/v1", "get") is None
    ns = Access.of("/api/v1/namespaces/ml", "get")
    assert ns == Access("", "namespaces", "get", None, "ml")
    with pytest.raises(AssertionError, match="never used"):
        check([get], [role, Grant({**role.rule, "verbs": ["get", "patch"]}, None)])
