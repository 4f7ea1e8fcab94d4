"""The HA end-to-end stack: two real ``guardian run`` replicas with leader election, the
fake Kubernetes API and fake Slack in this process, a real Prometheus scraping a live
fleet served from here, the shipped rule pack compressed as the demo compresses it.

Two idle Deployments on node n1, each governed by an enforcing policy: ``fast/idle-x``
(grace 20 s) and ``slow/idle-y`` (grace 60 s), and a busy one. The demo's parts are
reused: the time profile, the controller config, the replica processes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from guardian.adapters.ledger import Ledger
from guardian.adapters.local_prometheus import free_loopback_port
from guardian.adapters.openmetrics import Sample, format_value
from guardian.model.remediation_events import LadderStep, StepOutcome
from guardian.model.shared_episode import SharedEpisode
from guardian.model.times import parse_rfc3339
from testbed.demo import config as cfg
from testbed.demo.observers import get_json, shared_episodes
from testbed.demo.processes import ProcessGroup
from testbed.demo.profile import DemoProfile, write_profile_rules
from testbed.demo.replicas import Replicas
from testbed.feeds import FactSetup, latest, with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b
from testbed.slackapi import Channel, FakeSlack

from .scenario import ROOT

T = TypeVar("T")
FACTOR = 120  # 30m idle window -> 15 s, for: 5m -> 2.5 s
TOKEN = "xoxb-ha-e2e"  # noqa: S105 - the fake workspace's token
CHANNEL = Channel("C0HA", "gpu-ha")
NODE = "n1"
EVALUATION_S = float(cfg.EVALUATION_INTERVAL_S)


@dataclass(frozen=True)
class Gpu:
    namespace: str
    workload: str
    index: int
    utilization: float
    grace: str = ""  # the policy's grace period ("" for a workload no policy acts on)

    @property
    def pod(self) -> str:
        return f"{self.workload}-7c9d-0"

    @property
    def uuid(self) -> str:
        return f"GPU-ha-{self.index}"


FLEET = (
    Gpu("fast", "idle-x", 0, 0.0, grace="20s"),
    Gpu("slow", "idle-y", 1, 0.0, grace="60s"),
    Gpu("fast", "busy-z", 2, 0.85),
)
IDLE_X, IDLE_Y = FLEET[0], FLEET[1]


def policies() -> str:
    docs = []
    for gpu in FLEET:
        if not gpu.grace:
            continue
        docs.append(
            f"""apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {{name: reclaim-{gpu.namespace}}}
spec:
  mode: enforce
  alerts: {{names: [GpuIdle]}}
  scope: {{namespaces: [{gpu.namespace}]}}
  ladder: {{gracePeriod: {gpu.grace}}}
  warmup: 1m
"""
        )
    return "---\n".join(docs)


# The exporter's idle facts over the compressed windows, named as the compressed pack reads them.
FACTS = FactSetup(
    activity_window=1800 / FACTOR,
    memory_window=3600 / FACTOR,
    window_labels=(DemoProfile(FACTOR).window_label("30m"), DemoProfile(FACTOR).window_label("1h")),
)


def _line(sample: Sample) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in sample.labels.items())
    return f"{sample.name}{{{labels}}} {format_value(sample.value)}"


def exposition(now: float, started: float) -> str:
    """What node n1's exporter, reading its GPUs since ``started``, says right now: each
    pod runs a process on its GPU, and the idle facts of that (constant) history."""
    node = f'cluster="{cfg.CLUSTER}",node="{NODE}"'
    lines = [f"guardian_exporter_nvml_up{{{node}}} 1"]
    lines.append(f"guardian_exporter_last_success_timestamp_seconds{{{node}}} {now:.3f}")
    raw: list[Sample] = []
    for gpu in FLEET:
        dev = {"cluster": cfg.CLUSTER, "node": NODE, "uuid": gpu.uuid, "gpu": str(gpu.index)}
        owner = {"namespace": gpu.namespace, "pod": gpu.pod, "container": "main"}
        for at in sorted({started, now}):
            raw.append(Sample("guardian_gpu_utilization_ratio", dev, at, gpu.utilization))
            alloc = {**dev, **owner, "gpu_group": "ha"}
            raw.append(Sample("guardian_pod_gpu_allocated", alloc, at, 1.0))
    lines += [_line(s) for s in latest(with_idle_facts(raw, setup=FACTS), now)]
    return "\n".join(lines) + "\n"


@contextmanager
def live_exporter() -> Iterator[int]:
    """Serve ``exposition`` on a loopback port, computed at each scrape."""

    started = time.time()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            body = exposition(time.time(), started).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", free_loopback_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def seed(kube: FakeKubeAPI) -> None:
    for gpu in FLEET:
        labels = {"app": gpu.workload}
        dep = kube.create(b.deployment(gpu.workload, gpu.namespace, replicas=2, labels=labels))
        rs = kube.create(b.replicaset(f"{gpu.workload}-7c9d", gpu.namespace,
                                      owners=[b.owner_reference(dep)]))  # fmt: skip
        pod = b.pod(gpu.pod, gpu.namespace, node=NODE, labels=labels,
                    owners=[b.owner_reference(rs)])  # fmt: skip
        kube.create(pod)


def start_replicas(
    tmp_path: Path,
    kube: FakeKubeAPI,
    prometheus_url: str,
    slack: FakeSlack,
    *,
    app_token: str | None = None,
) -> tuple[ProcessGroup, Replicas]:
    """``app_token``: Slack buttons over Socket Mode with this app-level token."""
    profile = DemoProfile(factor=FACTOR)
    rules = write_profile_rules(
        sorted((ROOT / "rules" / "guardian").glob("*.yaml")), tmp_path / "rules", profile
    )
    policy = tmp_path / "policies.yaml"
    policy.write_text(policies(), encoding="utf-8")
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")

    def config_for(spec: cfg.ReplicaSpec) -> dict[str, Any]:
        config = cfg.controller_config(
            prometheus_url=prometheus_url,
            rule_files=rules,
            replica=spec,
            kubeconfig=kubeconfig,
            policy_files=[policy],
            slack=cfg.SlackTarget(slack.api_base_url, CHANNEL.id, buttons=app_token is not None),
            profile=profile,
        )
        config["slack"]["delivery"] = {"post_interval": "200ms"}
        # Prometheus restores no alert whose `for` is shorter than the grace period (2.5 s
        # here, once compressed): keep it shorter so that GpuIdle's for-state is restored.
        # The tolerance is generous: a loaded machine's restarts must not count as an outage.
        config["restore"] = {"for_grace_period": "1s", "for_outage_tolerance": "10m"}
        return config

    procs = ProcessGroup(tmp_path / "logs")
    env = {cfg.TOKEN_ENV: TOKEN, **({cfg.APP_TOKEN_ENV: app_token} if app_token else {})}
    replicas = Replicas.create(procs, tmp_path, kube, config_for, env=env)
    return procs, replicas


# ------------------------------------------------------------------ reading what happened
def wait_for(what: str, found: Callable[[], T | None], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = found()
        if value is not None and value is not False:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(0.2)


def record_of(kube: FakeKubeAPI, gpu: Gpu) -> SharedEpisode | None:
    """The newest shared episode of ``gpu``'s Deployment."""
    found = [
        r
        for r in shared_episodes(kube)
        if (r.workload.namespace, r.workload.name) == (gpu.namespace, gpu.workload)
    ]
    return found[-1] if found else None


def handed_over(kube: FakeKubeAPI, gpu: Gpu) -> SharedEpisode | None:
    """Its episode once annotated with its Slack parent shared: mid-ladder, in the grace."""
    record = record_of(kube, gpu)
    ready = record is not None and record.done(LadderStep.ANNOTATE) and record.slack
    return record if ready else None


def reclaimed(kube: FakeKubeAPI, gpu: Gpu) -> SharedEpisode | None:
    record = record_of(kube, gpu)
    return record if record is not None and record.done(LadderStep.RECLAIM) else None


def parents(slack: FakeSlack, gpu: Gpu) -> list[Any]:
    return [m for m in slack.messages(CHANNEL.id) if gpu.workload in m.text]


def notify_replies(message: Any) -> int:
    return sum("Step notify applied" in r.text for r in message.replies)


def applied(state: Path, gpu: Gpu, step: LadderStep) -> int:
    """How many times this replica's ledger says it applied ``step`` on ``gpu``."""
    if not state.exists():
        return 0
    ledger = Ledger.open(str(state))
    try:
        return sum(
            1
            for e in ledger.all_events()
            if e.workload.name == gpu.workload
            and e.step is step
            and e.outcome is StepOutcome.APPLIED
        )
    finally:
        ledger.close()


def active_at(url: str, gpu: Gpu) -> float | None:
    """``activeAt`` of ``gpu``'s GpuIdle alert on the replica at ``url``."""
    try:
        data = get_json(f"{url}/api/v1/alerts")
    except (OSError, ValueError):
        return None
    for alert in data["data"]["alerts"]:
        labels = alert["labels"]
        if labels.get("alertname") == "GpuIdle" and labels.get("pod") == gpu.pod:
            return parse_rfc3339(str(alert["activeAt"]))
    return None


def dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=str)
