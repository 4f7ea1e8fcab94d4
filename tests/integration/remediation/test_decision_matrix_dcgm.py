"""The decision matrix with dcgm-exporter: the workloads of test_decision_matrix.py, their
GPUs reported as dcgm-exporter 3.x with its Kubernetes pod mapping does (scraped as
``guardian dcgm-config`` configures it), and the dcgm pack (rules/dcgm/pipeline.yaml and
idle.yaml) in the engine. Every row of the matrix gets the same writes as with our
exporter. The shapes dcgm-exporter reports its own way, MIG instances and a GPU that
time-slicing shares, are rows of their own (docs/policies.md, "What counts as an idle
workload": "With dcgm-exporter")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.openmetrics import Sample, render_openmetrics
from testbed.kubeapi import FakeKubeAPI

from .scenario import MINUTES, ROOT, Controller, at, start_controller
from .test_decision_matrix import (
    BUSY,
    NS,
    PARTLY_IDLE,
    POLICY,
    ROWS,
    Row,
    check_notify_writes,
    outcome,
    partly_idle_events,
    pod_name,
    right_sized,
    run_ladder,
    seed,
)

DCGM_RULES = [ROOT / "rules/dcgm/pipeline.yaml", ROOT / "rules/dcgm/idle.yaml"]
MIG = "nvidia.com/mig-1g.10gb"
SHARED = "nvidia.com/gpu.shared"  # time-slicing replicas, as the device plugin renames them
BUSY_MIB = 30_000.0

# The shapes dcgm-exporter reports its own way, one Deployment each.
EXTRA = (
    # MIG: no DCGM_FI_DEV_GPU_UTIL; DCGM_FI_PROF_GR_ENGINE_ACTIVE and FB_USED per instance,
    # labelled with the GPU's UUID and the instance's GPU_I_ID.
    Row("mig-idle", "Deployment", ((0.0,),), "reclaimed"),
    # Two instances of one GPU: the controller tells an alert's device by its UUID and
    # its GPU_I_ID, so both instances idle are the whole pod idle.
    Row("mig2-idle", "Deployment", ((0.0, 0.0),), "reclaimed"),
    Row("mig2-onebusy", "Deployment", ((0.0, BUSY),), "untouched"),
    # Two pods time-slicing one GPU (--kubernetes-virtual-gpus: a `vgpu` label), each
    # pod's series carrying the whole GPU's values. Idle as a whole: GpuIdle for both.
    # In use, the idle pod cannot be told from the busy one: GpuActivityUnknown{reason=
    # "shared_gpu"} for both, which no policy acts on: not idle, no partly idle Event.
    Row("shared-idle", "Deployment", ((0.0,), (0.0,)), "reclaimed"),
    Row("shared-onebusy", "Deployment", ((0.0,), (BUSY,)), "untouched"),
)
SHAPE = {row.name: MIG if row.name.startswith("mig") else SHARED for row in EXTRA}
ALL = ROWS + EXTRA
DCGM_PARTLY_IDLE = PARTLY_IDLE | {"mig2-onebusy"}


@dataclass(frozen=True)
class Device:
    """A GPU, or a MIG instance of one, that a pod holds: one dcgm-exporter series each."""

    node: str
    gpu: int  # the GPU's index on its node
    pod: str
    util: float  # the GPU's (or instance's) activity, whichever pod uses it
    instance: str = ""  # GPU_I_ID
    vgpu: str = ""  # the pod's share of a time-sliced GPU

    @property
    def mib(self) -> float:
        """FB_USED: a busy device's memory; an idle one holds a CUDA context (512 MiB,
        plain GpuIdle) on odd GPUs and nothing (GpuIdle{reason="no_process"}) on even."""
        if self.util >= 0.05:
            return BUSY_MIB
        return 512.0 if (self.gpu + int(self.instance or 0)) % 2 else 0.0


def _claims(row: Row, i: int) -> list[tuple[int, float, str, str]]:
    """Pod ``i``'s devices: (GPU index from the row's first, activity, GPU_I_ID, vgpu)."""
    utils = row.pods[i]
    if SHAPE.get(row.name) == MIG:  # instances 1, 2, ... of the row's one GPU
        return [(0, u, str(j + 1), "") for j, u in enumerate(utils)]
    if SHAPE.get(row.name) == SHARED:  # the row's one GPU, as busy as its busiest pod
        return [(0, max(max(p) for p in row.pods), "", str(i))]
    first = sum(len(p) for p in row.pods[:i])
    return [(first + j, u, "", "") for j, u in enumerate(utils)]


def layout() -> tuple[list[Device], dict[str, str]]:
    """Every row's devices, 8 GPUs to a node, a row on one node; the node of each row."""
    devices: list[Device] = []
    node_of: dict[str, str] = {}
    node, used = 1, 0
    for row in ALL:
        claims = [(i, c) for i in range(len(row.pods)) for c in _claims(row, i)]
        gpus = 1 + max(c[0] for _i, c in claims)
        if used + gpus > 8:
            node, used = node + 1, 0
        node_of[row.name] = f"n{node}"
        devices += [
            Device(f"n{node}", used + k, pod_name(row, i), util, instance, vgpu)
            for i, (k, util, instance, vgpu) in claims
        ]
        used += gpus
    return devices, node_of


def _target(node: str) -> dict[str, str]:
    """The scrape target's labels: its `node` as `guardian dcgm-config` relabels it."""
    return {"cluster": "c1", "job": "dcgm-exporter", "instance": f"{node}:9400", "node": node}


def _series(d: Device) -> dict[str, str]:
    labels = _target(d.node) | {
        "gpu": str(d.gpu),
        "UUID": f"GPU-{d.node}-{d.gpu}",
        "device": f"nvidia{d.gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": d.node,
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
    }
    if d.instance:
        labels |= {"GPU_I_ID": d.instance, "GPU_I_PROFILE": "1g.10gb"}
    # The pod mapping, with honor_labels; gpu_group relabelled from the pod's group label.
    labels |= {"namespace": NS, "pod": d.pod, "container": "main", "gpu_group": "a"}
    return labels | ({"vgpu": d.vgpu} if d.vgpu else {})


def metrics(devices: list[Device]) -> str:
    samples: list[Sample] = []
    nodes = sorted({d.node for d in devices})
    for minute in range(MINUTES):
        ts = at(minute)
        samples += [Sample("up", _target(node), ts, 1.0) for node in nodes]
        for d in devices:
            labels = _series(d)
            if not d.instance:  # absent on MIG
                samples.append(Sample("DCGM_FI_DEV_GPU_UTIL", labels, ts, round(d.util * 100)))
            samples.append(Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, ts, d.util))
            samples.append(Sample("DCGM_FI_DEV_FB_USED", labels, ts, d.mib))
            # A powered GPU's draw keeps changing (GpuExporterStale reads it).
            power = 70.0 + 300.0 * d.util + minute % 7
            samples.append(Sample("DCGM_FI_DEV_POWER_USAGE", labels, ts, power))
    return render_openmetrics(samples)


@pytest.fixture(params=["notify", "rightSize"])
def partial(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def controller(
    prometheus: Any, kube: FakeKubeAPI, tmp_path: Path, partial: str
) -> Iterator[Controller]:
    devices, node_of = layout()
    prom = prometheus(openmetrics=metrics(devices))
    seed(kube, ALL, lambda row, _i: (node_of[row.name], SHAPE.get(row.name, "nvidia.com/gpu")))
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICY + f"  partial: {partial}\n", encoding="utf-8")
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    ctl = start_controller(prom.url, kubeconfig, tmp_path / "state.db", policies, rules=DCGM_RULES)
    try:
        yield ctl
    finally:
        ctl.close()


def _firing(controller: Controller) -> set[tuple[str, str]]:
    """(alertname, reason) of every alert pending or firing at the end."""
    return {
        (a.alert.labels.get("alertname", ""), a.alert.labels.get("reason", ""))
        for a in controller.engine.active_alerts()
    }


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_dcgm_exporter_gets_the_same_writes_where_its_labels_allow(
    controller: Controller, kube: FakeKubeAPI, kube_clock: Any, partial: str
) -> None:
    run_ladder(controller, kube, kube_clock)

    # Both idle rules spoke, the shared GPU in use was unknown, the pipeline was quiet.
    assert _firing(controller) == {
        ("GpuIdle", ""),
        ("GpuIdle", "no_process"),
        ("GpuActivityUnknown", "shared_gpu"),
    }
    got = {row.name: outcome(kube, row) for row in ALL}
    if partial == "rightSize":
        assert got == {row.name: right_sized(row) or row.expect for row in ALL}
        return
    assert got == {row.name: row.expect for row in ALL}

    check_notify_writes(controller, kube, ALL, DCGM_PARTLY_IDLE)
    events = partly_idle_events(kube)
    assert "mig2-onebusy-x-0 (1 of its 2 GPUs idle)" in events["mig2-onebusy"]
