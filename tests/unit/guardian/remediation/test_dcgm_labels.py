"""dcgm-exporter's labels where ours differ: the node as ``Hostname`` (its own scrape
config adds no ``node``) and a MIG instance as its GPU's ``UUID`` plus ``GPU_I_ID``.
Found by the dcgm decision matrix: a node's pipeline alert did not hold a reclaim whose
alert named the node only as ``Hostname``, and two idle MIG instances of one pod counted
as one GPU."""

from __future__ import annotations

import dataclasses

from guardian.engine.remediation.evidence import coverage
from guardian.engine.remediation.guards import pipeline_reason, pod_mismatch
from guardian.model.labels import LabelSet, node_of
from guardian.model.reclaim import FiringAlert, PodOwner

from .factories import NOW, healthy, member, pipeline_alert, ref, workload


def dcgm_idle(pod: str = "web-1", **labels: str) -> FiringAlert:
    base = {"alertname": "GpuIdle", "guardian_class": "reclaimable", "cluster": "c1",
            "namespace": "ml", "pod": pod, "Hostname": "n1", "UUID": "GPU-a"}  # fmt: skip
    return FiringAlert(LabelSet({**base, **labels}), NOW - 7200, True, group="idle")


def test_the_node_is_read_from_hostname_where_node_is_absent() -> None:
    assert node_of({"Hostname": "n1"}) == "n1"
    assert node_of({"hostname": "n2"}) == "n2"
    assert node_of({"node": "n3", "Hostname": "x"}) == "n3"
    assert node_of({}) == ""


def test_a_pipeline_alert_on_its_node_holds_a_dcgm_alert_naming_hostname() -> None:
    health = healthy()
    held = pipeline_reason([dcgm_idle()], [pipeline_alert(node="n1")], health, (), NOW, 300)
    assert held == "missing data is not idleness: GpuExporterStale is firing for node n1"
    other = pipeline_reason([dcgm_idle()], [pipeline_alert(node="n2")], health, (), NOW, 300)
    assert other is None


def test_the_pod_check_reads_hostname_too() -> None:
    owner = PodOwner("ml", "web-1", ref(), node="n2", uid="u")
    assert pod_mismatch(dcgm_idle().labels, owner) is not None
    assert pod_mismatch(dcgm_idle().labels, dataclasses.replace(owner, node="n1")) is None


def test_two_idle_mig_instances_of_one_gpu_are_two_devices() -> None:
    pod = dataclasses.replace(member("web-1", resource="nvidia.com/mig-1g.10gb", gpus=2))
    ws = workload(members=(pod,))
    both = [dcgm_idle(GPU_I_ID="1"), dcgm_idle(GPU_I_ID="2")]
    assert coverage(ws, both, NOW).whole
    one = coverage(ws, both[:1], NOW)
    assert (one.whole, one.partial) == (False, True)
    assert "1 of its 2 GPUs idle" in one.reason()
