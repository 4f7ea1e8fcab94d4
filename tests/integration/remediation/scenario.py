"""The end-to-end fleet: backfilled metrics, the cluster behind them, and the controller.

Shared by the in-process end-to-end test and the subprocess worker of the kill -9 test.
Node n1's exporter is healthy; node n2's stopped collecting at T0+20m (GpuExporterStale).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import config

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    RemediationParts,
    build_remediation,
    engine_alerts,
    pipeline_group_names,
)
from guardian.app.remediation.clusters import served_clusters, served_identities
from guardian.app.rules.engine_setup import EngineSinks, EvaluationSetup
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.remediation import LeaderElectionSettings, RemediationSettings
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.loader import parse_rule_file
from guardian.model.http_client import HttpClientConfig
from testbed.feeds import with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

ROOT = Path(__file__).resolve().parents[3]
RULES = [ROOT / "rules/guardian/pipeline.yaml", ROOT / "rules/guardian/idle.yaml"]
T0 = 1_700_000_000.0
MINUTES = 120
STALE_AFTER_MIN = 20

# (namespace, workload, pod, node, uuid, utilization)
GPUS = [
    ("ml", "idle-train", "idle-train-abc-1", "n1", "GPU-1", 0.0),
    ("ml", "busy-serve", "busy-serve-abc-1", "n1", "GPU-2", 0.8),
    ("ml", "excluded", "excluded-abc-1", "n1", "GPU-3", 0.0),
    ("kube-system", "sys", "sys-abc-1", "n1", "GPU-4", 0.0),
    ("ml", "nb", "nb-0", "n1", "GPU-5", 0.01),
    ("ml", "stale-train", "stale-train-abc-1", "n2", "GPU-6", 0.0),
    ("ml", "race-train", "race-train-abc-1", "n1", "GPU-7", 0.0),
]

POLICY = """
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata:
  name: idle-gpus
spec:
  mode: enforce
  alerts:
    names: [GpuIdle]
  ladder:
    gracePeriod: 10m
  warmup: 10m
"""


def at(minute: float) -> float:
    return T0 + minute * 60


def fleet_metrics() -> str:
    samples: list[Sample] = []
    for i in range(MINUTES):
        ts = at(i)
        for node in ("n1", "n2"):
            node_labels = {"cluster": "c1", "node": node, "job": "gpu-guardian-exporter"}
            samples.append(Sample("guardian_exporter_nvml_up", node_labels, ts, 1.0))
            collected = ts if node == "n1" or i <= STALE_AFTER_MIN else at(STALE_AFTER_MIN)
            samples.append(
                Sample(
                    "guardian_exporter_last_success_timestamp_seconds", node_labels, ts, collected
                )
            )
        for ns, _workload, pod, node, uuid, util in GPUS:
            gpu = {"cluster": "c1", "node": node, "uuid": uuid, "gpu": uuid[-1]}
            samples.append(Sample("guardian_gpu_utilization_ratio", gpu, ts, util))
            alloc = {**gpu, "namespace": ns, "pod": pod, "container": "main", "gpu_group": "a"}
            samples.append(Sample("guardian_pod_gpu_allocated", alloc, ts, 1.0))
    return render_openmetrics(with_idle_facts(samples))  # each pod runs a process on its GPU


def seed_cluster(kube: FakeKubeAPI) -> None:
    for ns, workload, pod, node, _uuid, _util in GPUS:
        if workload == "nb":
            nb = kube.create(b.notebook("nb", ns))
            sts = kube.create(b.statefulset("nb", ns, owners=[b.owner_reference(nb)]))
            kube.create(b.pod(pod, ns, node=node, owners=[b.owner_reference(sts)]))
            continue
        annotations = {"gpu-guardian.io/exclude": "true"} if workload == "excluded" else None
        dep = kube.create(b.deployment(workload, ns, replicas=3, annotations=annotations))
        rs = kube.create(b.replicaset(f"{workload}-abc", ns, owners=[b.owner_reference(dep)]))
        kube.create(b.pod(pod, ns, node=node, owners=[b.owner_reference(rs)]))


@dataclass(frozen=True)
class Stage:
    """What a controller of this fleet reads: Prometheus, the cluster, its two files."""

    prometheus_url: str
    kubeconfig: Path
    state: Path
    policies: Path

    @property
    def argv(self) -> list[str]:
        """The worker's command-line arguments."""
        return [self.prometheus_url, str(self.kubeconfig), str(self.state), str(self.policies)]


def set_stage(prometheus: Any, kube: FakeKubeAPI, tmp_path: Path) -> Stage:
    """The fleet's metrics in a real Prometheus, its workloads in the fake cluster."""
    prom = prometheus(openmetrics=fleet_metrics())
    seed_cluster(kube)
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICY, encoding="utf-8")
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    return Stage(prom.url, kubeconfig, tmp_path / "state.db", policies)


def compile_rules(rules: Sequence[Path] = RULES) -> list[CompiledGroup]:
    """The groups of ``rules`` (rule files), as the controller evaluates them."""
    groups = []
    for path in rules:
        rule_file = parse_rule_file(path.read_text(encoding="utf-8"), str(path))
        groups += [CompiledGroup.compile(g, 60.0) for g in rule_file.groups]
    return groups


@dataclass
class Controller:
    engine: RuleEngine
    parts: RemediationParts
    querier: PrometheusQuerier

    def evaluate(self, minutes: Iterable[float]) -> None:
        """Evaluate every group at each minute, pipeline first, as the scheduler would."""
        for minute in minutes:
            for group in self.engine.groups:
                self.engine.evaluate(group.key, at(minute))

    def close(self) -> None:
        self.parts.close()
        self.querier.close()
        self.engine.close()


def start_controller(
    prometheus_url: str,
    kubeconfig: Path,
    state: Path,
    policies: Path,
    *,
    rules: Sequence[Path] = RULES,
    **settings: Any,
) -> Controller:
    """The controller over ``rules`` (default: the guardian pack's pipeline and idle
    files); ``settings`` override the remediation settings."""
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prometheus_url, timeout=10)))
    store = AlertStore.open(str(state))
    engine = RuleEngine(
        compile_rules(rules),
        querier.query,
        evaluation=EvaluationSetup(env=TemplateEnv({}, "https://guardian.example")),
        sinks=EngineSinks(store=store),
    )
    engine.load_state()
    remediation = RemediationSettings.model_validate(
        {
            "enabled": True,
            "dry_run": False,
            "policy_files": [str(policies)],
            "kubeconfig": str(kubeconfig),
            "leader_election": LeaderElectionSettings(enabled=False),
            **settings,
        }
    )
    parts = build_remediation(
        remediation,
        store.db,
        EngineSide(engine_alerts(engine), pipeline_group_names(engine.groups)),
        ClusterAccess(
            config.new_client_from_config(config_file=str(kubeconfig)),
            source_clusters=served_clusters(querier.query),
            source_identities=served_identities(querier.query),
        ),
    )
    engine.listeners.append(parts.loop.on_evaluation)
    return Controller(engine, parts, querier)
