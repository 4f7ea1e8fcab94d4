"""Start and stop everything the demo runs: fake Kubernetes API, fake kubelets, fake (or
real) Slack, the simulated exporters, a real Prometheus and two ``guardian run`` replicas
with leader election.

:meth:`DemoStack.close` undoes whatever :meth:`DemoStack.start` got to, in reverse
order, whether the demo passed, failed or was interrupted.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml

from guardian.adapters.local_prometheus import (
    LocalPrometheus,
    PrometheusBinaries,
    PrometheusOptions,
    free_loopback_port,
    start_prometheus,
)
from guardian.model.policies_crd import crds
from guardian_common.errors import ConfigError, GuardianError
from guardian_common.words import plural
from testbed.demo import config as cfg
from testbed.demo.cluster import DemoCluster, start_kubelets
from testbed.demo.fleet import NODES, scenario_yaml
from testbed.demo.processes import Child, ProcessGroup, wait_http_ok
from testbed.demo.profile import DemoProfile, write_profile_rules
from testbed.demo.replicas import Replicas
from testbed.demo.timeline import Timeline
from testbed.kubeapi import FakeKubeAPI
from testbed.node.kubelet import FakeKubelet
from testbed.slackapi import Channel, FakeSlack

logger = logging.getLogger(__name__)

T = TypeVar("T")

FAKE_TOKEN = "xoxb-guardian-demo"  # noqa: S105 - the fake workspace's own token
FAKE_APP_TOKEN = "xapp-guardian-demo"  # noqa: S105 - its app-level token (Socket Mode)
FAKE_CHANNEL = Channel("C0GPUALERTS", "gpu-alerts")


class DemoStartError(GuardianError):
    """A part of the demo did not start; the message says which and shows its log."""


def need(value: T | None, what: str) -> T:
    """A part that an earlier start step set up."""
    if value is None:
        raise DemoStartError(f"{what} is not running")
    return value


@dataclass(frozen=True)
class DemoOptions:
    rules_dir: Path
    workdir: Path
    profile: DemoProfile = field(default_factory=DemoProfile)
    slack_token: str | None = None  # set: real Slack
    slack_channel: str | None = None
    slack_api_url: str = "https://slack.com/api/"
    pid_file: Path | None = None


@dataclass
class DemoStack:
    options: DemoOptions
    timeline: Timeline
    clock: Callable[[], float] = time.time
    kube: FakeKubeAPI | None = None
    slack: FakeSlack | None = None
    kubelets: dict[str, FakeKubelet] = field(default_factory=dict)
    cluster: DemoCluster | None = None
    prometheus: LocalPrometheus | None = None
    procs: ProcessGroup | None = None
    exporters: dict[str, Child] = field(default_factory=dict)
    exporter_ports: dict[str, int] = field(default_factory=dict)
    replicas: Replicas | None = None
    kubeconfig: Path | None = None
    policy_file: Path | None = None  # the policy object's YAML, for guardian simulate
    socket_dir: Path | None = None

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    def exporter_instance(self, node: str) -> str:
        """The ``instance`` label Prometheus gives the node's exporter target."""
        return f"127.0.0.1:{self.exporter_ports[node]}"

    @property
    def channel(self) -> str:
        return self.options.slack_channel or FAKE_CHANNEL.id

    # ------------------------------------------------------------ start
    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.procs = ProcessGroup(self.workdir / "logs", self.options.pid_file)
        rules = self._rules()
        self._kubernetes()
        slack_url = self._slack()
        self.exporter_ports = {node: free_loopback_port() for node in NODES}
        # Prometheus first: its start forks with a preexec_fn, which must happen before
        # this process runs gRPC (the kubelets); until the exporters start, it waits.
        self._prometheus(self.exporter_ports)
        self._kubelets()
        self._exporters()
        self._controllers(rules, slack_url)

    def _rules(self) -> list[Path]:
        sources = sorted(self.options.rules_dir.glob("*.yaml"))
        if not sources:
            raise ConfigError("no rule files (*.yaml) found", path=str(self.options.rules_dir))
        rules = write_profile_rules(sources, self.workdir / "rules", self.options.profile)
        promtool = PrometheusBinaries.find().promtool
        check = subprocess.run(  # noqa: S603 - fixed argv, no shell
            [promtool, "check", "rules", *map(str, rules)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check.returncode != 0:
            raise DemoStartError(
                f"promtool rejects the demo profile's rules:\n{check.stdout}{check.stderr}"
            )
        names = ", ".join(p.name for p in rules)
        self.timeline.event(
            "rules",
            f"demo profile: durations ÷{self.options.profile.factor} in {names}; "
            "engine loader and promtool check rules accept them",
        )
        return rules

    def _kubernetes(self) -> None:
        self.kube = FakeKubeAPI.start()
        self.kubeconfig = self.kube.write_kubeconfig(self.workdir / "kubeconfig")
        # A unix socket path must stay short (108 bytes): not under a deep workdir.
        self.cluster = DemoCluster(self.kube, {}, self.clock)
        self.cluster.seed()
        pods, deployments = len(self.kube.objects("Pod")), len(self.kube.objects("Deployment"))
        self.timeline.event(
            "kubernetes",
            f"fake API server at {self.kube.url}: "
            f"{plural(pods, 'pod')}, {plural(deployments, 'Deployment')}",
        )

    def _kubelets(self) -> None:
        cluster = need(self.cluster, "the fake API")
        self.socket_dir = Path(tempfile.mkdtemp(prefix="gg-demo-", dir="/tmp"))
        self.kubelets = start_kubelets(self.socket_dir)
        cluster.kubelets = self.kubelets
        cluster.publish_devices()
        self.timeline.event(
            "kubelet",
            f"fake kubelets (pod-resources API) for {', '.join(NODES)} in {self.socket_dir}",
        )

    def _slack(self) -> str:
        if self.options.slack_token:
            self.timeline.event("slack", f"sending to real Slack, channel {self.channel}")
            return self.options.slack_api_url
        self.slack = FakeSlack.start(
            tokens=[FAKE_TOKEN], app_tokens=[FAKE_APP_TOKEN], channels=[FAKE_CHANNEL]
        )
        self.timeline.event(
            "slack", f"fake Slack workspace at {self.slack.url}, channel #{FAKE_CHANNEL.name}"
        )
        return self.slack.api_base_url

    def _exporters(self) -> None:
        procs = need(self.procs, "the process group")
        kubeconfig = need(self.kubeconfig, "the fake API")
        sockets = need(self.socket_dir, "the kubelets")
        for node, port in self.exporter_ports.items():
            scenario = self.workdir / f"scenario-{node}.yaml"
            scenario.write_text(scenario_yaml(node), encoding="utf-8")
            windows = self.options.profile.exporter_windows()
            args = cfg.exporter_args(
                node, scenario, port, kubeconfig, sockets / f"{node}.sock", windows
            )
            self.exporters[node] = procs.python(f"exporter-{node}", args)
        for node, child in self.exporters.items():
            url = f"http://127.0.0.1:{self.exporter_ports[node]}"
            if not wait_http_ok(f"{url}/readyz", 30.0, child):
                raise DemoStartError(f"the exporter of {node} did not start:\n{child.log_tail()}")
            self.timeline.event("exporter", f"{node} serving {url}/metrics (pid {child.pid})")

    def _prometheus(self, ports: dict[str, int]) -> None:
        procs = need(self.procs, "the process group")
        options = PrometheusOptions(
            scrape_interval="1s",
            evaluation_interval="2s",
            scrape_configs=cfg.scrape_configs(ports),
        )
        self.prometheus = start_prometheus(self.workdir / "prometheus", options)
        procs.adopt(self.prometheus.pid)
        self.timeline.event(
            "prometheus", f"real Prometheus at {self.prometheus.url}, scraping every 1s"
        )

    def _controllers(self, rules: list[Path], slack_url: str) -> None:
        procs = need(self.procs, "the process group")
        prometheus = need(self.prometheus, "Prometheus")
        kubeconfig = need(self.kubeconfig, "the fake API")
        kube = need(self.kube, "the fake API")
        # The policy is an object, as an admin would `kubectl apply` it; the controllers
        # watch it. The file is what `guardian simulate` replays at the end.
        for crd in crds():
            kube.create(crd)
        kube.create(yaml.safe_load(cfg.POLICY))
        self.policy_file = self.workdir / "policy.yaml"
        self.policy_file.write_text(cfg.POLICY, encoding="utf-8")
        self.timeline.event(
            "cluster", f"ClusterReclaimPolicy {cfg.POLICY_NAME} created (CRDs installed)"
        )

        def config_for(spec: cfg.ReplicaSpec) -> dict[str, object]:
            return cfg.controller_config(
                prometheus_url=prometheus.url,
                rule_files=rules,
                replica=spec,
                kubeconfig=kubeconfig,
                policy_files=[],
                slack=cfg.SlackTarget(slack_url, self.channel, buttons=self.slack is not None),
                profile=self.options.profile,
            )

        token = self.options.slack_token or FAKE_TOKEN
        env = {cfg.TOKEN_ENV: token, cfg.APP_TOKEN_ENV: FAKE_APP_TOKEN}
        self.replicas = Replicas.create(procs, self.workdir, kube, config_for, env=env)
        for name in self.replicas.specs:
            child = self.replicas.start(name)
            self.timeline.event(
                "engine",
                f"guardian run, replica {name} (pid {child.pid}): {len(rules)} rule files, "
                f"ClusterReclaimPolicy {cfg.POLICY_NAME} in enforce mode, "
                f"grace {cfg.GRACE_PERIOD_S}s",
            )

    @property
    def config_path(self) -> Path | None:
        """A controller config (every replica's reads the same rules, Prometheus and
        policy): what ``guardian simulate`` and ``report`` read at the end."""
        if self.replicas is None or not self.replicas.specs:
            return None
        return self.replicas.config(next(iter(self.replicas.specs)))

    # ------------------------------------------------------------ stop
    def close(self, keep_workdir: bool) -> None:
        """Stop everything that was started, newest first. Never raises."""
        steps: list[tuple[str, Callable[[], None]]] = []
        if self.procs is not None:
            steps.append(("processes", self.procs.stop_all))
        if self.prometheus is not None:
            steps.append(("prometheus", self.prometheus.stop))
        steps += [(f"kubelet {n}", k.stop) for n, k in self.kubelets.items()]
        if self.slack is not None:
            steps.append(("fake Slack", self.slack.stop))
        if self.kube is not None:
            steps.append(("fake Kubernetes API", self.kube.stop))
        if self.socket_dir is not None:
            socket_dir = self.socket_dir
            steps.append(("sockets", lambda: shutil.rmtree(socket_dir, ignore_errors=True)))
        if not keep_workdir:
            steps.append(("workdir", lambda: shutil.rmtree(self.workdir, ignore_errors=True)))
        for name, step in steps:
            try:
                step()
            except Exception:  # the loop edge: stop the rest whatever one part did
                logger.exception("demo cleanup: stopping %s failed", name)
