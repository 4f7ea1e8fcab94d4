"""Three weeks of a small fleet, one sample every 5 minutes, in a real Prometheus.

- team-a: ``ml/train-…`` on an A100, 50 % busy until day 7, then 1 %;
- team-b: ``research/notebook-0`` on an H100, never busy;
- team-c: ``serve/web-…``, two replicas on two A100s: one never busy, the other 90 %
  busy until day 10, then idle too (partly idle until day 10, then fully idle);
- an H100 no pod holds.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardian.adapters.local_prometheus import LocalPrometheus, PrometheusOptions, start_prometheus
from guardian.adapters.openmetrics import Sample, render_openmetrics
from tests.integration.simulate.fleet import CLUSTER, MODELS, T0, Fleet, Gpu, Pod

DAYS = 21
CHANGE = 7 * 1440 + 5  # team-a's training goes idle: the first sample of day 7's window
SERVED = 10 * 1440 + 5  # team-c's busy replica goes idle: the first sample of day 10's window


def train(minute: int) -> float:
    return 0.5 if minute < CHANGE else 0.01


def serving(minute: int) -> float:
    return 0.9 if minute < SERVED else 0.0


def fleet() -> Fleet:
    gpus = [Gpu("n1", 0, "A100"), Gpu("n1", 1, "H100"), Gpu("n1", 2, "H100")]
    gpus += [Gpu("n1", 3, "A100"), Gpu("n1", 4, "A100")]
    return Fleet(
        minutes=DAYS * 1440 + 1,
        step=5,
        gpus=gpus,
        pods=[
            Pod("ml", "train-7d9f8c6b5-x2x4z", gpus[0], "team-a", 0, 10**6, train),
            Pod("research", "notebook-0", gpus[1], "team-b", 0, 10**6, lambda _m: 0.0),
            Pod("serve", "web-6c7b8d9f5-k2l4m", gpus[3], "team-c", 0, 10**6, lambda _m: 0.0),
            Pod("serve", "web-6c7b8d9f5-p9q8r", gpus[4], "team-c", 0, 10**6, serving),
        ],
    )


def dcgm_samples() -> list[Sample]:
    """The same fleet as dcgm-exporter and `guardian dcgm-config`'s relabelling give it."""
    out = []
    f = fleet()
    for minute in range(0, f.minutes, f.step):
        ts = T0 + minute * 60
        for gpu in f.gpus:
            labels = {
                "cluster": CLUSTER,
                "Hostname": gpu.node,
                "gpu": str(gpu.index),
                "UUID": gpu.uuid,
                "modelName": MODELS[gpu.model],
                "instance": "10.0.0.1:9400",
                "job": "dcgm-exporter",
            }
            pod = next((p for p in f.pods if p.gpu == gpu), None)
            util = pod.utilization(minute) if pod else 0.0
            if pod is not None:
                labels |= {"namespace": pod.namespace, "pod": pod.name, "gpu_group": pod.group}
            out.append(Sample("DCGM_FI_DEV_GPU_UTIL", labels, ts, util * 100))
            out.append(Sample("DCGM_FI_DEV_FB_USED", labels, ts, 1024.0))
    return out


def config(path: Path, url: str) -> Path:
    path.write_text(
        textwrap.dedent(f"""\
        prometheus: {{url: "{url}"}}
        rule_files: [rules.yaml]
        prices: {{per_model: {{A100: 2.5, H100: 4.0}}, currency: "€"}}
        """),
        encoding="utf-8",
    )
    (path.parent / "rules.yaml").write_text("groups: []\n", encoding="utf-8")
    return path


@pytest.fixture(scope="package")
def fleet_prometheus(tmp_path_factory, prometheus_binaries) -> Iterator[LocalPrometheus]:
    work = tmp_path_factory.mktemp("report-prom")
    text = render_openmetrics(fleet().samples())
    prom = start_prometheus(
        work,
        PrometheusOptions(openmetrics=text, backfill_block_duration="720h"),
        binaries=prometheus_binaries,
    )
    try:
        yield prom
    finally:
        prom.stop()


@pytest.fixture(scope="package")
def dcgm_prometheus(tmp_path_factory, prometheus_binaries) -> Iterator[LocalPrometheus]:
    work = tmp_path_factory.mktemp("report-dcgm")
    text = render_openmetrics(dcgm_samples())
    prom = start_prometheus(
        work,
        PrometheusOptions(openmetrics=text, backfill_block_duration="720h"),
        binaries=prometheus_binaries,
    )
    try:
        yield prom
    finally:
        prom.stop()
