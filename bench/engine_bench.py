"""Rule-engine benchmark: one engine cycle against Prometheus's own evaluation of the group.

A synthetic fleet of GPUs (default 10,000; 3 dcgm-exporter metrics, one sample a minute
around "now") is backfilled into a real Prometheus through guardian.adapters.local_prometheus and
guardian.adapters.openmetrics. The same rule group is loaded into that Prometheus, which
evaluates it on its own schedule, and into the engine, which evaluates it in a separate
process (so its peak RSS is the engine's alone) against the same server.

Prints, in one run:
- the engine's cycle time (query + templating + state machine + SQLite commit);
- Prometheus's own evaluation time for the same group on the same data
  (``prometheus_rule_group_last_duration_seconds``), and the ratio (goal <= 1.5);
- the engine's overhead: cycle time minus the time spent waiting for queries;
- queries per cycle against the number of alerting rules (goal: equal, any fleet size);
- the engine's peak RSS (goal <= 150 MiB).

    .venv/bin/python bench/engine_bench.py [--gpus 10000] [--minutes 20] [--cycles 3]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus
from guardian.adapters.openmetrics import Sample, render_openmetrics

GROUP = "bench-gpu"
RULES = """\
groups:
  - name: bench-gpu
    rules:
      - alert: GpuIdle
        expr: |
          max by (Hostname, gpu, UUID, namespace, pod) (
            max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[10m])
          ) < 5
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: An allocated GPU is idle.
          description: >-
            Pod {{ $labels.namespace }}/{{ $labels.pod }} holds GPU {{ $labels.gpu }} on
            {{ $labels.Hostname }} and peaked at {{ $value | humanize }}% over 10m.
      - alert: GpuMemoryUnderutilized
        expr: |
          DCGM_FI_DEV_FB_USED{pod!=""}
            / on (Hostname, gpu, UUID) group_left ()
          (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) < 0.1
        for: 10m
        labels:
          severity: info
        annotations:
          description: '{{ $labels.pod }} uses {{ $value | humanizePercentage }} of its GPU memory.'
      - alert: GpuSaturated
        expr: avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m]) > 95
        labels:
          severity: info
        annotations:
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is saturated.'
"""


def fleet(gpus: int, start: float, minutes: int, seed: int = 7) -> list[Sample]:
    """8 GPUs a node; 80 % allocated to pods; a quarter of those idle, a fifth with
    little memory in use, a tenth saturated."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for i in range(gpus):
        labels = {"Hostname": f"node-{i // 8:05d}", "gpu": str(i % 8), "UUID": f"GPU-{i:08x}"}
        if rng.random() < 0.8:
            labels |= {"namespace": f"team-{i % 20}", "pod": f"job-{i // 2}-{i % 2}"}
        kind = rng.random()
        util_base = 1.0 if kind < 0.25 else (98.0 if kind > 0.9 else 60.0)
        fb_total = 81920.0
        fb_used = fb_total * (0.05 if rng.random() < 0.2 else 0.6)
        for m in range(minutes):
            ts = start + m * 60
            util = max(0.0, min(100.0, util_base + rng.uniform(-1, 1)))
            samples.append(Sample("DCGM_FI_DEV_GPU_UTIL", labels, ts, round(util, 1)))
            samples.append(Sample("DCGM_FI_DEV_FB_USED", labels, ts, fb_used))
            samples.append(Sample("DCGM_FI_DEV_FB_FREE", labels, ts, fb_total - fb_used))
    return samples


def _prometheus_durations(url: str, rule_file: Path) -> tuple[float, float] | None:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:  # noqa: S310
        text = response.read().decode()
    key = f"{rule_file.resolve()};{GROUP}"
    duration = iterations = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("rule_group") != key:
                continue
            if sample.name == "prometheus_rule_group_last_duration_seconds":
                duration = sample.value
            elif sample.name == "prometheus_rule_group_iterations_total":
                iterations = sample.value
    if duration is None or iterations is None:
        return None
    return duration, iterations


def _peak_rss_mib() -> float:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child started from
    # this (large) parent would report the parent's peak.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def engine_cycles(url: str, rules: Path, state: Path, cycles: int) -> dict[str, Any]:
    """Runs in a child process: build the engine, run ``cycles`` evaluations."""
    from guardian.adapters.alert_store import AlertStore
    from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
    from guardian.app.rules.engine_setup import EngineSinks
    from guardian.app.rules.runtime import RuleEngine
    from guardian.engine.rules.group_eval import CompiledGroup
    from guardian.engine.rules.loader import parse_rule_file
    from guardian.engine.rules.slots import slot_at_or_before
    from guardian.model.http_client import HttpClientConfig

    query_seconds: list[float] = []
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(url, timeout=120)),
        observer=lambda _outcome, seconds: query_seconds.append(seconds),
    )
    rule_file = parse_rule_file(rules.read_text(), str(rules))
    groups = [CompiledGroup.compile(g, 60.0) for g in rule_file.groups]
    engine = RuleEngine(groups, querier.query, sinks=EngineSinks(store=AlertStore.open(str(state))))
    (group,) = groups
    out: dict[str, Any] = {"cycle_s": [], "query_s": [], "queries": [], "alerts": []}
    for n in range(cycles):
        # Successive slots, so values move as they would between real cycles.
        ts = slot_at_or_before(time.time(), group.group.file, group.name, 60.0) + n * 60.0
        query_seconds.clear()
        started = time.perf_counter()
        engine.evaluate(group.key, ts)
        out["cycle_s"].append(time.perf_counter() - started)
        out["query_s"].append(sum(query_seconds))
        out["queries"].append(len(query_seconds))
        out["alerts"].append(len(engine.active_alerts()))
    out["rules"] = len(group.rules)
    out["peak_rss_mib"] = _peak_rss_mib()
    engine.close()
    querier.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--minutes", type=int, default=20, help="history before now")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--engine-cycle", nargs=3, metavar=("URL", "RULES", "STATE"))
    args = parser.parse_args()
    if args.engine_cycle:
        url, rules, state = args.engine_cycle
        print(json.dumps(engine_cycles(url, Path(rules), Path(state), args.cycles)))
        return

    with tempfile.TemporaryDirectory(prefix="engine-bench-") as tmp:
        work = Path(tmp)
        rules = work / "rules.yaml"
        rules.write_text(RULES)
        now = time.time()
        # History up to now, plus 15 minutes ahead so the data is still "current" for
        # instant queries (5m lookback) however long the backfill takes.
        start = (now // 60) * 60 - args.minutes * 60
        t = time.perf_counter()
        samples = fleet(args.gpus, start, args.minutes + 15)
        text = render_openmetrics(samples)
        print(
            f"fleet: {args.gpus} GPUs, {len(samples):,} samples "
            f"({time.perf_counter() - t:.1f}s to generate)"
        )
        del samples
        t = time.perf_counter()
        prom = start_prometheus(
            work / "prometheus",
            PrometheusOptions(
                openmetrics=text,
                rule_files=[rules],
                evaluation_interval="15s",
                ready_timeout=120,
            ),
        )
        del text
        print(f"prometheus: backfilled and ready in {time.perf_counter() - t:.1f}s")
        try:
            prom_runs: list[float] = []
            seen = 0.0
            deadline = time.monotonic() + 120
            while len(prom_runs) < 3 and time.monotonic() < deadline:
                found = _prometheus_durations(prom.url, rules)
                if found is not None and found[1] > seen:
                    seen = found[1]
                    prom_runs.append(found[0])
                time.sleep(1)
            result = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--cycles",
                    str(args.cycles),
                    "--engine-cycle",
                    prom.url,
                    str(rules),
                    str(work / "state.db"),
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            )
            engine = json.loads(result.stdout)
        finally:
            prom.stop()

    prom_s = statistics.median(prom_runs)
    cycle_s = statistics.median(engine["cycle_s"])
    query_s = statistics.median(engine["query_s"])
    print(f"alerts (pending+firing) per cycle: {engine['alerts']}")
    print(
        f"engine cycle time:     median {cycle_s * 1000:8.1f} ms   "
        f"(each: {', '.join(f'{c * 1000:.0f}' for c in engine['cycle_s'])} ms)"
    )
    print(
        f"prometheus group eval: median {prom_s * 1000:8.1f} ms   "
        f"(prometheus_rule_group_last_duration_seconds, {len(prom_runs)} evaluations)"
    )
    print(f"  ratio cycle / prometheus: {cycle_s / prom_s:.2f}x (goal <= 1.5x)")
    print(
        f"engine overhead (cycle - query): {(cycle_s - query_s) * 1000:.1f} ms "
        f"(query time {query_s * 1000:.1f} ms)"
    )
    queries = engine["queries"]
    print(
        f"queries per cycle: {queries} for {engine['rules']} alerting rules "
        f"(ratio {statistics.median(queries) / engine['rules']:.2f}, goal 1.00)"
    )
    print(
        f"engine peak RSS: {engine['peak_rss_mib']:.1f} MiB "
        f"(ratio to 150 MiB goal: {engine['peak_rss_mib'] / 150:.2f})"
    )


if __name__ == "__main__":
    main()
