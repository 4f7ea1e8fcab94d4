"""Run the demo's story in every deployment shape at once; write what happened as JSON.

    python -m tests.integration.matrix.driver WORKDIR RESULT.json

Shapes (one simulated cluster each, all started together to share the wall clock):

- ``flag``: ``cluster`` from the exporters' ``--cluster-name``; node2's exporter is
  killed early, so its GpuExporterDown is firing while node1's idle notebook is
  reclaimed (a dead exporter holds only its node);
- ``external``: ``cluster`` from Prometheus's external labels, added by the Thanos
  stand-in the controller reads through;
- ``absent``: no ``cluster`` anywhere;
- ``a`` and ``b``: two clusters behind one Thanos stand-in; in ``b`` the same-named
  ``ml/train-llm`` is idle, in ``a`` busy. Only ``a`` has a controller.

A separate process, as `the demo (`make demo`)` is: the demo's parts fork Prometheus before
they run gRPC servers, which a long pytest session cannot promise.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from guardian.adapters.ledger import Ledger
from guardian.app.remediation.status import build_status
from testbed.demo import config as cfg
from testbed.demo.cluster import deployment_state
from testbed.demo.fleet import DOOMED_NODE, NODES, NOTEBOOK, SWEEP, TRAINING
from testbed.demo.observers import get_json, prometheus_query
from testbed.demo.processes import ProcessGroup
from testbed.demo.profile import DemoProfile, write_profile_rules
from testbed.demo.run import default_rules_dir

from .stacks import Cluster, Shape

DEADLINE_S = 200.0
SETTLE_S = 8.0  # after the last reclaim: refusals and holds have had a few cycles
TICK_S = 0.5
KILL_AFTER_S = 3.0  # after the flag cluster's first scrape

SHAPES = (
    Shape("flag", exporter_cluster="prod-flag"),
    Shape("external", external_cluster="prod-ext"),
    Shape("absent"),
    Shape("a", external_cluster="a", own_cluster="a"),
    Shape("b", external_cluster="b", controller=False, idle=(TRAINING.name,)),
)
WATCHED = (TRAINING, NOTEBOOK, SWEEP)


class Observer:
    """Per controller: every alert's first pending/firing and last firing time, and each
    watched Deployment's replicas over time."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.alerts: dict[str, dict[str, Any]] = {}
        self.replicas: dict[str, list[tuple[float, int]]] = {}
        self.reclaimed_at: float | None = None

    def poll(self, now: float) -> None:
        try:
            data = get_json(f"{self.cluster.engine_url}/api/v1/alerts")
        except (OSError, ValueError):
            data = {}
        for alert in data.get("data", {}).get("alerts", []):
            labels = {str(k): str(v) for k, v in alert.get("labels", {}).items()}
            seen = self.alerts.setdefault(json.dumps(labels, sort_keys=True), {"labels": labels})
            seen.setdefault(f"first_{alert.get('state')}", now)
            if alert.get("state") == "firing":
                seen["last_firing"] = now
        assert self.cluster.kube is not None
        for w in WATCHED:
            replicas, _ = deployment_state(self.cluster.kube, w.namespace, w.name)
            history = self.replicas.setdefault(f"{w.namespace}/{w.name}", [])
            if not history or history[-1][1] != replicas:
                history.append((now, replicas))
            if w is NOTEBOOK and replicas == 0 and self.reclaimed_at is None:
                self.reclaimed_at = now


@contextmanager
def started(workdir: Path) -> Iterator[list[Cluster]]:
    procs = ProcessGroup(workdir / "logs")
    clusters = [Cluster(s, workdir / s.name, procs) for s in SHAPES]
    try:
        for c in clusters:
            c.start_prometheus()
        for c in clusters:
            c.start_cluster()
        for c in clusters:
            c.wait_exporters()
        rules = write_profile_rules(
            sorted(default_rules_dir().glob("*.yaml")), workdir / "rules", DemoProfile()
        )
        stores = {c.name: c.store() for c in clusters}
        for c in clusters:
            if c.shape.controller:
                wanted = [stores["a"], stores["b"]] if c.name == "a" else [stores[c.name]]
                c.start_controller(rules, wanted)
        for c in clusters:
            c.wait_controller()
        yield clusters
    finally:
        procs.stop_all()
        for c in clusters:
            c.close()


def run(workdir: Path) -> dict[str, Any]:
    with started(workdir) as clusters:
        by_name = {c.name: c for c in clusters}
        observers = {c.name: Observer(c) for c in clusters if c.shape.controller}
        flag = by_name["flag"]
        killed_at: float | None = None
        first_scrape: float | None = None
        finished = False
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            now = time.time()
            for c in clusters:
                assert c.demo is not None
                c.demo.sync()
            for obs in observers.values():
                obs.poll(now)
            assert flag.prometheus is not None
            if first_scrape is None and len(
                prometheus_query(flag.prometheus.url, f'up{{job="{cfg.EXPORTER_JOB}"}} == 1')
            ) == len(NODES):
                first_scrape = now
            if killed_at is None and first_scrape is not None and now - first_scrape > KILL_AFTER_S:
                flag.procs.kill(flag.exporters[DOOMED_NODE])
                killed_at = now
            reclaims = [o.reclaimed_at for o in observers.values()]
            if all(reclaims) and now - max(r or 0.0 for r in reclaims) > SETTLE_S:
                finished = True
                break
            time.sleep(TICK_S)
        b_writes = [
            f"{r.verb} {r.path}"
            for r in (by_name["b"].kube.requests() if by_name["b"].kube else [])
            if r.verb not in ("get", "list", "watch")
        ]
    results: dict[str, Any] = {"finished": finished, "killed_at": killed_at, "b_writes": b_writes}
    for name, obs in observers.items():
        results[name] = {
            "alerts": list(obs.alerts.values()),
            "replicas": obs.replicas,
            "reclaimed_at": obs.reclaimed_at,
            **ledger_of(by_name[name].workdir / cfg.ReplicaSpec("a", 0).state_dir / "state.db"),
        }
    return results


def ledger_of(path: Path) -> dict[str, Any]:
    ledger = Ledger.open(str(path))
    try:
        events = [
            {
                "workload": str(e.workload),
                "step": e.step.value,
                "outcome": e.outcome.value,
                "at": e.at,
                "reason": e.reason,
            }
            for e in ledger.all_events()
        ]
        report = build_status(ledger)
        return {"ledger": events, "refused": report.refused, "misconfigured": report.misconfigured}
    finally:
        ledger.close()


def main(argv: list[str]) -> int:
    workdir, out = Path(argv[0]), Path(argv[1])
    results = run(workdir)
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if results["finished"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
