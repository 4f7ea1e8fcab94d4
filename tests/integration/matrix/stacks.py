"""One simulated cluster of the deployment matrix, built from the demo's parts.

Each cluster is the demo's fleet (guardian/demo): a fake Kubernetes API seeded with it,
fake kubelets, two simulated exporters, a real Prometheus scraping them and, for the
clusters a controller watches, a real ``guardian run`` reading a query endpoint (its
Prometheus, or the Thanos stand-in in front of one or two). What differs between shapes
is where ``cluster`` comes from (:class:`Shape`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.local_prometheus import (
    LocalPrometheus,
    PrometheusOptions,
    free_loopback_port,
    start_prometheus,
)
from testbed.demo import config as cfg
from testbed.demo.cluster import DemoCluster, start_kubelets
from testbed.demo.fleet import NODES, scenario_yaml
from testbed.demo.processes import Child, ProcessGroup, wait_http_ok
from testbed.demo.profile import DemoProfile
from testbed.kubeapi import FakeKubeAPI
from testbed.node.kubelet import FakeKubelet
from testbed.thanos_query import Store, ThanosQuery

GRACE_PERIOD_S = 6  # the demo's 20 s, shortened: the matrix runs several stories at once


@dataclass(frozen=True)
class Shape:
    """Where one cluster's ``cluster`` label comes from, and what runs on it."""

    name: str
    exporter_cluster: str | None = None  # guardian-exporter serve --cluster-name
    external_cluster: str | None = None  # Prometheus external_labels (Thanos adds them)
    controller: bool = True
    own_cluster: str | None = None  # remediation.cluster
    idle: tuple[str, ...] = ()  # workloads that hold their GPUs with no process here


@dataclass
class Cluster:
    shape: Shape
    workdir: Path
    procs: ProcessGroup
    ports: dict[str, int] = field(default_factory=dict)
    prometheus: LocalPrometheus | None = None
    kube: FakeKubeAPI | None = None
    demo: DemoCluster | None = None
    kubelets: dict[str, FakeKubelet] = field(default_factory=dict)
    socket_dir: Path | None = None
    exporters: dict[str, Child] = field(default_factory=dict)
    thanos: ThanosQuery | None = None
    engine: Child | None = None
    engine_url: str = ""

    @property
    def name(self) -> str:
        return self.shape.name

    def store(self) -> Store:
        assert self.prometheus is not None
        labels = {"cluster": self.shape.external_cluster} if self.shape.external_cluster else {}
        return Store(self.prometheus.url, labels)

    # ------------------------------------------------------------ start, in phases
    def start_prometheus(self) -> None:
        """First, before any kubelet: its fork must happen before this process runs gRPC."""
        self.ports = {node: free_loopback_port() for node in NODES}
        external = {"cluster": self.shape.external_cluster} if self.shape.external_cluster else {}
        options = PrometheusOptions(
            scrape_interval="1s",
            evaluation_interval="2s",
            scrape_configs=cfg.scrape_configs(self.ports, cluster=None),
            external_labels=external,
        )
        self.prometheus = start_prometheus(self.workdir / "prometheus", options)
        self.procs.adopt(self.prometheus.pid)

    def start_cluster(self) -> None:
        """The fake API with the fleet, the kubelets, and the exporters (not yet ready)."""
        self.kube = FakeKubeAPI.start()
        kubeconfig = self.kube.write_kubeconfig(self.workdir / "kubeconfig")
        self.demo = DemoCluster(self.kube, {}, time.time)
        self.demo.seed()
        self.socket_dir = Path(tempfile.mkdtemp(prefix="gg-matrix-", dir="/tmp"))
        self.kubelets = start_kubelets(self.socket_dir)
        self.demo.kubelets = self.kubelets
        self.demo.publish_devices()
        for node, port in self.ports.items():
            scenario = self.workdir / f"scenario-{node}.yaml"
            scenario.write_text(scenario_yaml(node, self.shape.idle), encoding="utf-8")
            sock = self.socket_dir / f"{node}.sock"
            args = cfg.exporter_args(node, scenario, port, kubeconfig, sock)
            if self.shape.exporter_cluster:
                args += ["--cluster-name", self.shape.exporter_cluster]
            self.exporters[node] = self.procs.python(f"{self.name}-exporter-{node}", args)

    def wait_exporters(self) -> None:
        for node, child in self.exporters.items():
            url = f"http://127.0.0.1:{self.ports[node]}/readyz"
            if not wait_http_ok(url, 60.0, child):
                raise RuntimeError(
                    f"{self.name}: exporter {node} did not start:\n{child.log_tail()}"
                )

    def start_controller(self, rules: list[Path], stores: list[Store]) -> None:
        """``guardian run`` on this cluster, reading ``stores`` (one: its Prometheus, as is
        or through the Thanos stand-in when it has external labels)."""
        assert self.prometheus is not None
        assert self.kube is not None
        query_url = self.prometheus.url
        if any(s.external_labels for s in stores) or len(stores) > 1:
            self.thanos = ThanosQuery(stores).start()
            query_url = self.thanos.url
        policy = self.workdir / "policies.yaml"
        policy.write_text(cfg.policy(GRACE_PERIOD_S), encoding="utf-8")
        port = free_loopback_port()
        config = controller_config(self, rules, query_url, policy, port)
        path = cfg.write_yaml(self.workdir / "guardian.yaml", config)
        self.engine = self.procs.python(
            f"{self.name}-guardian-run", ["guardian", "run", "--config", str(path)]
        )
        self.engine_url = f"http://127.0.0.1:{port}"

    def wait_controller(self) -> None:
        if self.engine is not None and not wait_http_ok(
            f"{self.engine_url}/healthz", 60.0, self.engine
        ):
            raise RuntimeError(
                f"{self.name}: guardian run did not start:\n{self.engine.log_tail()}"
            )

    def close(self) -> None:
        if self.thanos is not None:
            self.thanos.stop()
        if self.prometheus is not None:
            self.prometheus.stop()
        for kubelet in self.kubelets.values():
            kubelet.stop()
        if self.kube is not None:
            self.kube.stop()
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)


def controller_config(
    cluster: Cluster, rules: list[Path], query_url: str, policy: Path, port: int
) -> dict[str, Any]:
    """The demo's controller config, without Slack, reading ``query_url``; ALERTS are
    written to the cluster's own Prometheus, as a Thanos setup writes to Receive."""
    assert cluster.prometheus is not None
    config = cfg.controller_config(
        prometheus_url=query_url,
        rule_files=rules,
        replica=cfg.ReplicaSpec("a", port),
        kubeconfig=cluster.workdir / "kubeconfig",
        policy_files=[policy],
        slack=cfg.SlackTarget("http://127.0.0.1:9/", "C0"),
        profile=DemoProfile(),
    )
    del config["slack"]
    config["remote_write"] = {"url": f"{cluster.prometheus.url}/api/v1/write"}
    if cluster.shape.external_cluster and not cluster.shape.own_cluster:
        # The default cluster: the one the controller's own external labels name.
        config["external_labels"] = {"cluster": cluster.shape.external_cluster}
    if cluster.shape.own_cluster:
        config["remediation"]["cluster"] = cluster.shape.own_cluster
    return config
