"""Issue #20: `alerts.source: prometheus`. A real Prometheus evaluates the rendered pack
(`guardian rules render --format rulefile`); the controller reads its /api/v1/rules instead
of evaluating, and the remediation end to end passes on it. A rule made to fail (a query
that errors at evaluation) blocks every step for its alerts until it is fixed.

The fleet is laid around the wall clock, since Prometheus evaluates now: history in blocks
(up to a minute ago), the next minutes pushed by remote write. GpuIdle's `for: 5m` is not
waited out: its ALERTS_FOR_STATE history is in the blocks, so Prometheus restores the alerts
as firing after its second evaluation (rules/manager.go RestoreForState), as after a
restart (with a grace period shorter than that `for`). GpuExporterStale is pending for
node n2, whose exporter stopped collecting.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import config as k8s_config

from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.app.remediation.build import (
    ClusterAccess,
    EngineSide,
    build_remediation,
    engine_alerts,
    pipeline_group_names,
)
from guardian.app.rules.build import build_engine
from guardian.app.settings.config_file import load_settings
from guardian.app.settings.remediation import RemediationSettings
from guardian.engine.rules.loader import parse_rule_file
from guardian.engine.rules.render import RenderOptions, render
from guardian.model.alerts import EvaluationHealth
from guardian.model.remediation_events import WorkloadRef
from guardian.model.series import TimeSeries
from testbed.feeds import as_series, with_idle_facts
from testbed.kubeapi import FakeKubeAPI
from tests.integration.alertmanager.live import push, steps, wait_until

from .scenario import GPUS, RULES, seed_cluster

INTERVAL = 5  # Prometheus's evaluation_interval, seconds
BROKEN = 'label_replace(vector(1), "a", "$1", "b", "(")'  # parses; fails when evaluated
IDLE = WorkloadRef("apps/v1", "Deployment", "ml", "idle-train")
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
    gracePeriod: 0s
  warmup: 0s
"""


Row = tuple[str, dict[str, str], float]  # metric, labels, value


def _alloc(ns: str, pod: str, gpu: dict[str, str]) -> dict[str, str]:
    return {**gpu, "namespace": ns, "pod": pod, "container": "main", "gpu_group": "a"}


def rows(ts: float, now: float) -> list[Row]:
    """The fleet's samples at ``ts``; n2's exporter stopped collecting 20 minutes ago."""
    out: list[Row] = []
    for node in ("n1", "n2"):
        labels = {"cluster": "c1", "node": node, "job": "gpu-guardian-exporter"}
        collected = ts if node == "n1" else now - 20 * 60
        out.append(("guardian_exporter_nvml_up", labels, 1.0))
        out.append(("guardian_exporter_last_success_timestamp_seconds", labels, collected))
    for ns, _workload, pod, node, uuid, util in GPUS:
        gpu = {"cluster": "c1", "node": node, "uuid": uuid, "gpu": uuid[-1]}
        out.append(("guardian_gpu_utilization_ratio", gpu, util))
        out.append(("guardian_pod_gpu_allocated", _alloc(ns, pod, gpu), 1.0))
    return out


def for_state_rows(now: float) -> list[Row]:
    """GpuIdle's ALERTS_FOR_STATE for every idle GPU: active since 50 minutes ago."""
    out: list[Row] = []
    for ns, _workload, pod, node, uuid, util in GPUS:
        if util >= 0.05:
            continue
        gpu = {"cluster": "c1", "node": node, "uuid": uuid, "gpu": uuid[-1]}
        labels = {
            **_alloc(ns, pod, gpu),
            "alertname": "GpuIdle",
            "severity": "warning",
            "guardian_class": "reclaimable",
        }
        out.append(("ALERTS_FOR_STATE", labels, now - 50 * 60))
    return out


def fed(now: float) -> list[Sample]:
    """The exporters' samples, from 80 minutes ago to 5 minutes ahead, with the idle facts
    of that whole history (each pod runs a process on its GPU)."""
    times = steps(now - 80 * 60, now - 60, 60) + steps(now, now + 5 * 60, 60)
    raw = [Sample(name, labels, ts, value) for ts in times for name, labels, value in rows(ts, now)]
    return with_idle_facts(raw)


def history(now: float) -> str:
    """The blocks: 80 minutes up to a minute ago, and GpuIdle's for-state until 41m ago."""
    samples = [s for s in fed(now) if s.timestamp < now]
    samples += [
        Sample(name, labels, ts, value)
        for ts in steps(now - 45 * 60, now - 41 * 60, 60)
        for name, labels, value in for_state_rows(now)
    ]
    return render_openmetrics(samples)


def live(now: float) -> list[TimeSeries]:
    """The next five minutes, pushed once Prometheus is up (the exporters keep reporting)."""
    return as_series(s for s in fed(now) if s.timestamp >= now)


def rendered_pack(path: Path, broken: bool = False) -> None:
    files = [parse_rule_file(p.read_text(encoding="utf-8"), str(p)) for p in RULES]
    text = render(files, RenderOptions(format="rulefile"))
    if broken:
        doc = yaml.safe_load(text)
        for group in doc["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == "GpuIdle":
                    rule["expr"] = BROKEN
        text = yaml.safe_dump(doc, sort_keys=False)
    path.write_text(text, encoding="utf-8")


def gpuidle_rule(prom_url: str) -> dict[str, Any]:
    body = requests.get(f"{prom_url}/api/v1/rules", params={"type": "alert"}, timeout=5).json()
    rules = [r for g in body["data"]["groups"] for r in g["rules"] if r["name"] == "GpuIdle"]
    (rule,) = rules
    return rule


def firing_pods(prom_url: str) -> set[str]:
    rule = gpuidle_rule(prom_url)
    return {a["labels"]["pod"] for a in rule["alerts"] if a["state"] == "firing"}


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_remediation_on_the_alerts_of_a_prometheus_evaluating_the_rendered_pack(
    prometheus: Any, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    now = time.time()
    pack = tmp_path / "rendered.yaml"
    rendered_pack(pack)
    prom = prometheus(
        openmetrics=history(now),
        rule_files=[pack],
        evaluation_interval=f"{INTERVAL}s",
        # Rules with `for` under the grace period are not restored; GpuIdle's is 5m.
        extra_args=["--rules.alert.for-grace-period=1m"],
    )
    push(prom.url, live(now))
    seed_cluster(kube)
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    config = tmp_path / "guardian.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "prometheus": {"url": prom.url, "timeout": "10s"},
                "rule_files": [str(p) for p in RULES],
                "evaluation_interval": f"{INTERVAL}s",
                "state_path": str(tmp_path / "state.db"),
                "alerts": {"source": "prometheus"},
            }
        ),
        encoding="utf-8",
    )
    settings = load_settings(config)
    parts = build_engine(settings)
    engine = parts.engine
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    assert engine.store is not None
    remediation = build_remediation(
        RemediationSettings.model_validate(
            {
                "enabled": True,
                "dry_run": False,
                "policy_files": [str(tmp_path / "policies.yaml")],
                "kubeconfig": str(kubeconfig),
                "cycle_interval": "1s",
                "leader_election": {"enabled": False},
            }
        ),
        engine.store.db,
        EngineSide(engine_alerts(engine), pipeline_group_names(engine.groups)),
        ClusterAccess(k8s_config.new_client_from_config(config_file=str(kubeconfig))),
    )
    engine.listeners.append(remediation.loop.on_evaluation)
    ledger = remediation.ledger

    def cycle() -> None:
        for group in engine.groups:  # pipeline first, then the idle group runs a cycle
            engine.evaluate(group.key, time.time())
        time.sleep(1.1)  # the loop's cycle interval

    def steps_of(name: str) -> list[tuple[str, str]]:
        ref = WorkloadRef("apps/v1", "Deployment", "ml", name)
        return [(e.step.value, e.outcome.value) for e in ledger.all_events() if e.workload == ref]

    def reasons_of(name: str, namespace: str = "ml") -> str:
        ref = WorkloadRef("apps/v1", "Deployment", namespace, name)
        return "\n".join(e.reason for e in ledger.all_events() if e.workload == ref)

    try:
        wait_until(lambda: "idle-train-abc-1" in firing_pods(prom.url), 60, "GpuIdle restored")
        cycle()
        cycle()
        assert steps_of("idle-train") == [("notify", "applied"), ("annotate", "applied")]

        # Break GpuIdle in Prometheus: its health turns err, and no step runs for its alerts.
        rendered_pack(pack, broken=True)
        requests.post(f"{prom.url}/-/reload", timeout=10).raise_for_status()
        wait_until(lambda: gpuidle_rule(prom.url)["health"] == "err", 30, "GpuIdle failing")
        cycle()
        health = remediation.loop.health["guardian-gpu-idle"]
        assert not health.healthy
        assert "rule GpuIdle: failed (rule_health)" in health.reason
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3
        assert "missing data is not idleness: rule group guardian-gpu-idle" in reasons_of(
            "idle-train"
        )
        outcome = engine.runtime(engine.groups[1].key).last
        assert outcome is not None
        assert EvaluationHealth.FAILED in {o.health for o in outcome.outcomes}

        # Fixed: the ladder resumes and reclaims.
        rendered_pack(pack)
        requests.post(f"{prom.url}/-/reload", timeout=10).raise_for_status()
        wait_until(lambda: gpuidle_rule(prom.url)["health"] == "ok", 30, "GpuIdle healthy")
        cycle()  # the evidence is back: resumed, said once; a reclaim waits one evaluation
        assert steps_of("idle-train")[-2:] == [("resume", "applied"), ("reclaim", "planned")]
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 3
        cycle()
        assert steps_of("idle-train")[-1] == ("reclaim", "applied")
        assert kube.get("Deployment", "idle-train", "ml")["spec"]["replicas"] == 0

        # Untouched: busy, excluded, kube-system, and the one behind a stale exporter.
        for ns, name in (
            ("ml", "busy-serve"),
            ("ml", "excluded"),
            ("kube-system", "sys"),
            ("ml", "stale-train"),
        ):
            assert kube.get("Deployment", name, ns)["spec"]["replicas"] == 3, name
        assert steps_of("busy-serve") == []
        assert "exclude=true" in reasons_of("excluded")
        assert "kube-system is always excluded" in reasons_of("sys", "kube-system")
        assert "GpuExporterStale is pending for node n2" in reasons_of("stale-train")
    finally:
        remediation.close()
        parts.querier.close()
        engine.close()
