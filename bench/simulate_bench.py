"""``guardian simulate`` benchmark: a 7-day replay at 1-minute steps over 1,000 GPUs.

A synthetic fleet (default 1,000 GPUs, 8 per node; our exporter's metrics, one sample
every 5 minutes for 7 days) is backfilled into a real Prometheus. The shipped guardian
pack's idle and pipeline groups are replayed over it at 1-minute steps with one policy,
and the script prints, in one run:

- the bare range queries: the same queries, same chunks, only fetched and parsed;
- the whole simulation (timeline, ladder replay, usage of every would-be reclaim);
- the ratio (goal <= 2x) and what the replay found.

    .venv/bin/python bench/simulate_bench.py [--gpus 1000] [--days 7]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TextIO

from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.history.fetch import RangeFetcher, plan_chunks
from guardian.app.rules.build import compile_groups
from guardian.app.settings.config_file import load_settings
from guardian.app.simulate.alert_timeline import group_slots, needs_instant
from guardian.app.simulate.printout import render_json
from guardian.app.simulate.simulation import Clients, SimulateOptions, Simulation
from guardian.model.history import TimeRange
from guardian.model.http_client import HttpClientConfig

RULES = Path(__file__).resolve().parents[1] / "rules" / "guardian"
DAY = 86400
T0 = 1_700_006_400  # a midnight, far from the server's own head block
SAMPLE_MINUTES = 5
POLICY = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: bench}
spec:
  mode: observe
  alerts: {names: [GpuIdle]}
  ladder: {gracePeriod: 1h}
  warmup: 0s
  limits: {perCycle: 50, perNamespacePerHour: 100}
"""


def write_fleet(path: Path, gpus: int, days: int, seed: int = 11) -> int:
    """OpenMetrics for the fleet, written family by family (promtool's order). 20 % of the
    allocated GPUs idle throughout; 10 % idle for a day then busy (regret material)."""
    rng = random.Random(seed)
    steps = days * 1440 // SAMPLE_MINUTES + 1
    times = [T0 + i * SAMPLE_MINUTES * 60 for i in range(steps)]
    kinds = []
    for _i in range(gpus):
        roll = rng.random()
        kinds.append(
            "free" if roll < 0.1 else "idle" if roll < 0.3 else "late" if roll < 0.4 else "busy"
        )
    count = 0
    with path.open("w", encoding="utf-8") as out:

        def family(name: str, series: list[tuple[str, list[float]]]) -> None:
            nonlocal count
            for labels, values in series:
                prefix = f"{name}{{{labels}}}"
                out.writelines(
                    f"{prefix} {v} {t}.000\n" for t, v in zip(times, values, strict=True)
                )
                count += len(values)

        def gpu_labels(i: int) -> str:
            return f'cluster="bench",gpu="{i % 8}",node="node-{i // 8:04d}",uuid="GPU-{i:06x}"'

        def util(i: int) -> list[float]:
            kind = kinds[i]
            if kind in ("idle", "free"):
                return [0.01] * steps
            if kind == "late":
                return [0.01 if t < T0 + DAY else 0.7 for t in times]
            return [round(0.5 + 0.4 * rng.random(), 2) for _ in times]

        nodes = sorted({i // 8 for i in range(gpus)})
        # Node health every minute, as a 30 s scrape keeps it fresh (a 5-minute-old last
        # success would make GpuExporterStale flap); per-GPU series every 5 minutes.
        minutes = [T0 + m * 60 for m in range(days * 1440 + 1)]
        for name in (
            "guardian_exporter_last_success_timestamp_seconds",
            "guardian_exporter_nvml_up",
        ):
            for n in nodes:
                prefix = f'{name}{{cluster="bench",node="node-{n:04d}"}}'
                value = (lambda t: float(t)) if "success" in name else (lambda _t: 1.0)
                out.writelines(f"{prefix} {value(t)} {t}.000\n" for t in minutes)
                count += len(minutes)
        model = 'driver_version="550",mig="disabled",model="NVIDIA A100-SXM4-80GB"'
        family(
            "guardian_gpu_info", [(f"{gpu_labels(i)},{model}", [1.0] * steps) for i in range(gpus)]
        )
        utils = [util(i) for i in range(gpus)]
        family("guardian_gpu_utilization_ratio", [(gpu_labels(i), utils[i]) for i in range(gpus)])
        count += write_facts(out, times, [gpu_labels(i) for i in range(gpus)], utils, kinds)
        family(
            "guardian_pod_gpu_allocated",
            [
                (
                    (
                        f'{gpu_labels(i)},container="main",gpu_group="team-{i % 7}",'
                        f'namespace="ns-{i % 13}",pod="job{i}-7d9f8c6b5-x2x4z",'
                        'resource="nvidia.com/gpu"'
                    ),
                    [1.0] * steps,
                )
                for i in range(gpus)
                if kinds[i] != "free"
            ],
        )
        out.write("# EOF\n")
    return count


def write_facts(
    out: TextIO, times: list[int], labels: list[str], utils: list[list[float]], kinds: list[str]
) -> int:
    """The exporter's idle facts the shipped idle group reads, consistent with the samples
    (issue #33): observed since the first one, last active at the newest sample above the
    0.05 floor, the peak over the trailing 30 minutes (the 6 samples up to each, from 30
    minutes on), and a process at every sample on every allocated GPU."""
    written = 0
    window = 30 // SAMPLE_MINUTES

    def put(name: str, series: list[tuple[str, list[tuple[int, float]]]]) -> None:
        nonlocal written
        for text, points in series:
            out.writelines(f"{name}{{{text}}} {v} {t}.000\n" for t, v in points)
            written += len(points)

    put(
        "guardian_gpu_observed_since_timestamp_seconds",
        [(lab, [(t, float(times[0])) for t in times]) for lab in labels],
    )
    active = []
    for lab, values in zip(labels, utils, strict=True):
        points, last = [], None
        for t, v in zip(times, values, strict=True):
            last = t if v > 0.05 else last
            if last is not None:
                points.append((t, float(last)))
        active.append((lab, points))
    put("guardian_gpu_last_active_timestamp_seconds", active)
    peaks = [
        (
            f'{lab},window="30m"',
            [(times[k], max(values[k - window + 1 : k + 1])) for k in range(window, len(times))],
        )
        for lab, values in zip(labels, utils, strict=True)
    ]
    put("guardian_gpu_utilization_peak_ratio", peaks)
    put(
        "guardian_gpu_last_process_timestamp_seconds",
        [
            (lab, [(t, float(t)) for t in times])
            for lab, k in zip(labels, kinds, strict=True)
            if k != "free"
        ],
    )
    return written


def bare_queries(
    settings, querier: PrometheusQuerier, span: TimeRange, chunk: float
) -> tuple[float, int]:
    """The simulation's range queries, same chunks, fetched and parsed, nothing else."""
    fetcher = RangeFetcher(querier)
    groups = compile_groups(settings)
    finest = min(g.interval_seconds for g in groups)
    chunks = plan_chunks(TimeRange(span.start, span.end, finest), chunk)
    started = time.perf_counter()
    for n, c in enumerate(chunks):
        end = chunks[n + 1].span.start if n + 1 < len(chunks) else span.end + 0.0005
        for group in groups:
            slots = [s for s in group_slots(group, c.span.start, end) if s < end * 1000]
            if not slots:
                continue
            sub = TimeRange(slots[0] / 1000, slots[-1] / 1000, group.interval_seconds)
            for _key, rule in group.rules:
                if not needs_instant(rule.query):
                    fetcher.fetch(rule.query, sub)
    return time.perf_counter() - started, fetcher.queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="simulate-bench-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        samples = write_fleet(work / "fleet.om", args.gpus, args.days)
        took = time.perf_counter() - t
        print(f"fleet: {args.gpus} GPUs, {args.days} days, {samples:,} samples ({took:.1f}s)")
        t = time.perf_counter()
        prom = start_prometheus(
            work / "prometheus",
            PrometheusOptions(
                openmetrics=work / "fleet.om", backfill_block_duration="168h", ready_timeout=300
            ),
        )
        (work / "fleet.om").unlink()
        print(f"backfill and start: {time.perf_counter() - t:.1f}s")
        try:
            (work / "policy.yaml").write_text(POLICY, encoding="utf-8")
            config = work / "guardian.yaml"
            config.write_text(
                textwrap.dedent(f"""\
                prometheus: {{url: "{prom.url}", timeout: 300s}}
                rule_files: ["{RULES}/idle.yaml", "{RULES}/pipeline.yaml"]
                prices: {{per_model: {{A100: 2.5}}}}
                remediation: {{policy_files: [policy.yaml]}}
                """),
                encoding="utf-8",
            )
            settings = load_settings(config, {})
            querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=300)))
            span = TimeRange(T0 + 3600, T0 + args.days * DAY, 60.0)
            bare, queries = bare_queries(settings, querier, span, DAY)
            print(f"bare range queries: {queries} queries, {bare:.1f}s")
            options = SimulateOptions(since=span.start, until=span.end)
            t = time.perf_counter()
            result = Simulation(settings, options, Clients(querier)).run()
            whole = time.perf_counter() - t
            querier.close()
        finally:
            prom.stop()
        totals = render_json(result)["totals"]
        print(f"simulate: {result.queries} queries, {whole:.1f}s")
        print(f"ratio simulate / bare range queries: {whole / bare:.2f} (goal <= 2)")
        print(
            f"found: {sum(result.fired.values())} alerts fired, "
            f"{totals['notifications']} notifications, "
            f"{totals['reclaims']} reclaims ({totals['regret']} regretted), "
            f"{totals['freed_gpu_hours']:.0f} GPU-hours freed, ${totals['cost']:,.0f}"
        )


if __name__ == "__main__":
    main()
