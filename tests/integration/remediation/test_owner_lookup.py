"""The Slack notifier's owner lookup, through the real client against the fake API."""

from __future__ import annotations

from guardian.adapters.kube.reader import KubeReader
from guardian.app.notify.owner_context import OwnerLookup
from guardian.model.labels import LabelSet
from guardian.model.notifications import MENTION_ANNOTATION
from guardian.model.remediation_events import WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b


def test_owner_and_mentions_come_from_the_cluster(kube: FakeKubeAPI, reader: KubeReader) -> None:
    kube.create(b.namespace("ml", annotations={MENTION_ANNOTATION: "S0TEAM"}))
    dep = kube.create(b.deployment("train", "ml", annotations={MENTION_ANNOTATION: "U0ALICE"}))
    rs = kube.create(b.replicaset("train-abc", "ml", owners=[b.owner_reference(dep)]))
    kube.create(b.pod("train-abc-1", "ml", owners=[b.owner_reference(rs)]))
    clock = [0.0]
    lookup = OwnerLookup(reader, ttl=60, monotonic=lambda: clock[0])

    context = lookup(LabelSet({"namespace": "ml", "pod": "train-abc-1"}))

    assert context is not None
    assert context.workload == WorkloadRef("apps/v1", "Deployment", "ml", "train")
    assert context.mention == "U0ALICE"
    calls = len(kube.requests())
    assert lookup(LabelSet({"namespace": "ml", "pod": "train-abc-1"})) == context
    assert len(kube.requests()) == calls  # cached

    clock[0] = 61.0
    kube.patch("Deployment", "train", {"metadata": {"annotations": None}}, "ml")
    fresh = lookup(LabelSet({"namespace": "ml", "pod": "train-abc-1"}))
    assert fresh is not None
    assert fresh.mention == "S0TEAM"  # the namespace's, once the workload has none


def test_unknown_pods_and_api_errors_give_partial_or_no_context(
    kube: FakeKubeAPI, reader: KubeReader
) -> None:
    kube.create(b.namespace("ml"))
    lookup = OwnerLookup(reader)

    gone = lookup(LabelSet({"namespace": "ml", "pod": "gone-0"}))
    assert gone is not None
    assert gone.workload is None
    assert lookup(LabelSet({"node": "n1"})) is None  # a pipeline alert names no namespace

    kube.fail_next(500, times=None)
    assert lookup(LabelSet({"namespace": "other", "pod": "x"})) is None
