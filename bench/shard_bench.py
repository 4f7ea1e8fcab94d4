"""Queries in shards (``prometheus.query_shards``): what each part costs Prometheus.

The pack benchmark's fleet (``--gpus``, bench/fleet_guardian.py) is written into a real
Prometheus; then each splittable rule of the guardian pack is asked at one time, whole
and in 2 and 4 parts (``guardian/engine/promql/shard.py``), one query at a time, 3
times. Printed per rule and number of parts (medians): Prometheus's own CPU for all
parts together (from /proc, so Go's garbage collector on other cores counts), the
largest part's CPU and wall time, and whether the parts' joined answer is the whole
answer. With a core for each part the rule would take about the largest part's wall
time; on a busy machine, about the parts' CPU together.

    .venv/bin/python bench/shard_bench.py [--gpus 10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import fleet_load
from fleet_core import Timeline
from pack_bench import HISTORY_S, build_fleet

from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.rules.build import read_rule_files
from guardian.app.settings.clients import PrometheusSettings
from guardian.engine.promql import printed
from guardian.engine.promql.shard import pivots, query_split_label, shard_queries
from guardian.model.http_client import HttpClientConfig

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    "| rule | label | parts | CPU, all parts | CPU, largest | wall, largest | answer |\n"
    "|---|---|---|---|---|---|---|"
)
LABELS = tuple(PrometheusSettings.model_fields["shard_labels"].default)


class Probe:
    def __init__(self, querier: PrometheusQuerier, pid: int, ts: float) -> None:
        self.querier, self.pid, self.ts = querier, pid, ts
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime

    def ask(self, text: str) -> tuple[float, float, list[object]]:
        cpu, wall = self.cpu(), time.perf_counter()
        answer = self.querier.query(text, self.ts)
        samples = sorted((sorted(s.labels.to_dict().items()), s.value) for s in answer.samples)
        return self.cpu() - cpu, time.perf_counter() - wall, samples


def measure(probe: Probe, name: str, text: str, rounds: int) -> None:
    label = query_split_label(text, LABELS)
    if label is None:
        return
    values = probe.querier.label_values(label, probe.ts - 3600, probe.ts)
    whole: list[object] = []
    for parts in (1, 2, 4):
        queries = shard_queries(text, label, tuple(pivots(values, parts))) if parts > 1 else (text,)
        runs = [[probe.ask(q) for q in queries] for _ in range(rounds)]
        cpu = [statistics.median(r[i][0] for r in runs) for i in range(len(queries))]
        wall = [statistics.median(r[i][1] for r in runs) for i in range(len(queries))]
        joined = sorted(s for part in runs[0] for s in part[2])
        whole = joined if parts == 1 else whole
        same = "whole" if parts == 1 else ("equal" if joined == whole else "DIFFERENT")
        print(
            f"| {name} | {label} | {len(queries)} | {sum(cpu):.2f} s | {max(cpu):.2f} s | "
            f"{max(wall):.2f} s | {same} |",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = int(time.time() - HISTORY_S) // 60 * 60
    t = Timeline(start=start, step=15, steps=(HISTORY_S + 600) // 15, anchor=HISTORY_S // 15)
    fleet = build_fleet("guardian", args.gpus, t, 21)
    files = read_rule_files([str(p) for p in sorted((ROOT / "rules" / "guardian").glob("*.yaml"))])
    rules = [(r.name, printed(r.expr)) for f in files for g in f.groups for r in g.alerting_rules]
    with tempfile.TemporaryDirectory(prefix="shard-bench-") as tmp:
        prom = start_prometheus(
            Path(tmp),
            PrometheusOptions(
                ready_timeout=600, extra_args=["--storage.tsdb.max-block-duration=2h"]
            ),
        )
        querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=300)))
        try:
            fleet_load.remote_write(fleet, t, prom.url, 900 // 15)
            del fleet
            probe = Probe(querier, prom.pid, start + HISTORY_S - 60)
            print(f"\n### {args.gpus:,} GPUs, medians of {args.rounds}\n")
            print(HEADER)
            for name, text in rules:
                measure(probe, name, text, args.rounds)
        finally:
            querier.close()
            prom.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
