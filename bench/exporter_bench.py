"""Exporter benchmark: a busy shared node (8 GPUs, 64 pods, 512 processes).

Prints, in one run:
- collection-cycle CPU time, without NVML's own (here: the simulator's) time;
- /metrics latency p50/p99 with 10 concurrent scrapers, against the floor: the same series in
  a pre-built prometheus_client registry served by prometheus_client's own WSGI app, and
  generate_latest() on that registry in-process;
- RSS after 10,000 cycles and its growth.

    .venv/bin/python bench/exporter_bench.py [--cycles 10000] [--scrapes 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
import urllib.request
from array import array
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, make_wsgi_app
from prometheus_client.parser import text_string_to_metric_families

from exporter.adapters.procfs import ProcReader
from exporter.app.collection import CollectionLoop, CollectionTiming, NodeSources, SnapshotStore
from exporter.app.metrics import RenderedSnapshot
from exporter.app.server import ExporterApp, HttpServer
from exporter.engine.snapshot_builder import SnapshotSetup
from exporter.engine.vgpu import VgpuRatios
from testbed.node.cgroups import cgroup_file_text, pod_cgroup_path, write_proc_entry
from testbed.node.scenario import Scenario
from testbed.node.scenario_backend import SimulatedBackend

GPUS, PODS, PROCESSES = 8, 64, 512
INTERVAL = 5.0


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def busy_node(proc_root: Path) -> Scenario:
    """8 GPUs, 8 pods per GPU, 8 processes per pod; pods come and go and change load."""
    rng = random.Random(7)
    gpus = [
        {"uuid": f"GPU-{g:08x}-0000-4000-8000-{g:012x}", "model": "NVIDIA H100 80GB HBM3"}
        for g in range(GPUS)
    ]
    layouts = [("systemd", "containerd"), ("systemd", "crio"), ("cgroupfs", "docker")]
    qos = ["guaranteed", "burstable", "besteffort"]
    processes: list[dict[str, Any]] = []
    for pod in range(PODS):
        uid = f"{pod:08x}-1111-4222-8333-{pod:012x}"
        cid = f"{pod:016x}" * 4
        driver, runtime = layouts[pod % 3]
        gpu = gpus[pod % GPUS]["uuid"]
        for k in range(PROCESSES // PODS):
            pid = 100_000 + pod * 100 + k
            steps = [{"at": 0, "percent": rng.choice([0, 5, 30, 80])}]
            steps.append({"at": rng.randint(60, 3600), "percent": rng.choice([0, 0, 50])})
            processes.append(
                {"pid": pid, "gpu": gpu, "memory": rng.randint(1, 8) << 30, "sm_percent": steps,
                 "pod_uid": uid, "container_id": cid, "qos": qos[pod % 3]}
            )  # fmt: skip
            path = pod_cgroup_path(uid, cid, driver=driver, runtime=runtime, qos=qos[pod % 3])  # type: ignore[arg-type]
            write_proc_entry(proc_root, pid, cgroup_file_text(path, 2 if pod % 2 else 1))
    return Scenario.model_validate({"gpus": gpus, "processes": processes})


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def floor_registry(body: bytes) -> CollectorRegistry:
    """The same series, as ordinary prometheus_client metrics in a pre-built registry."""
    registry = CollectorRegistry()
    for family in text_string_to_metric_families(body.decode()):
        if not family.samples:
            continue
        labels = sorted(family.samples[0].labels)
        cls = Counter if family.type == "counter" else Gauge
        metric = cls(family.name, family.documentation or "x", labels, registry=registry)
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            child = metric.labels(**s.labels) if labels else metric
            if isinstance(child, Counter):
                child.inc(s.value)
            else:
                child.set(s.value)
    return registry


def scrape_latencies(url: str, scrapers: int, per_scraper: int) -> list[float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = []
        for _ in range(per_scraper):
            started = time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - loopback
                r.read()
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(scrapers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--scrapes", type=int, default=200, help="per scraper (10 scrapers)")
    args = parser.parse_args()
    rss_start = rss_mib()

    with tempfile.TemporaryDirectory() as tmp:
        proc_root = Path(tmp)
        scenario = busy_node(proc_root)
        clock = Clock()
        backend = SimulatedBackend(scenario, clock)
        store = SnapshotStore()
        collector = CollectionLoop(
            NodeSources(backend, ProcReader(proc_root)), store,
            SnapshotSetup("bench-node", VgpuRatios(2.0)),
            CollectionTiming(INTERVAL, timeout=30.0, backoff_max=60.0, clock=clock),
        )  # fmt: skip

        # 1. Collection cycles: CPU of the cycle minus the backend's (worker thread) CPU.
        # Preallocated, so that the benchmark's own bookkeeping does not grow the RSS it measures.
        cycle_cpu = array("d", bytes(8 * args.cycles))
        nvml_cpu = array("d", bytes(8 * args.cycles))
        render_cpu = array("d", bytes(8 * args.cycles))
        checkpoints = {1_000, args.cycles // 2, args.cycles}
        rss_at: dict[int, float] = dict.fromkeys(checkpoints, 0.0)
        for i in range(1, args.cycles + 1):
            clock.now += INTERVAL
            t0, p0 = time.thread_time(), time.process_time()
            snap = collector.run_cycle()
            t1, p1 = time.thread_time(), time.process_time()
            cycle_cpu[i - 1] = t1 - t0
            nvml_cpu[i - 1] = (p1 - p0) - (t1 - t0)
            rendered = store.current
            if rendered is None:
                raise SystemExit("the collector published nothing")
            r0 = time.thread_time()
            rendered.body(None)  # one scrape per snapshot, as Prometheus would
            render_cpu[i - 1] = time.thread_time() - r0
            if i in checkpoints:
                rss_at[i] = rss_mib()
        series = len(snap.gpus) * 10 + len(snap.pods) * 5
        print(f"node: {GPUS} GPUs, {len({p.pod_uid for p in snap.pods})} pods, "
              f"{sum(p.processes for p in snap.pods)} processes, ~{series} series")  # fmt: skip
        print(f"collection cycle CPU (attribution + snapshot, excl. NVML): "
              f"median {statistics.median(cycle_cpu) * 1e3:.2f} ms, "
              f"p99 {pct(cycle_cpu, 0.99) * 1e3:.2f} ms   [goal <= 5 ms]")  # fmt: skip
        nvml_ms = statistics.median(nvml_cpu) * 1e3
        print(f"  simulated NVML CPU per cycle (excluded): median {nvml_ms:.2f} ms")
        print(f"  render CPU per new snapshot (once, shared by all scrapes): "
              f"median {statistics.median(render_cpu) * 1e3:.2f} ms")  # fmt: skip

        # 2. /metrics latency with 10 concurrent scrapers, ours vs the floor.
        body, _ = store.current.body(None)
        registry = floor_registry(body)
        floor_runs = []
        for _ in range(200):
            t0 = time.perf_counter()
            generate_latest(registry)
            floor_runs.append(time.perf_counter() - t0)
        cold_runs = []
        for _ in range(200):
            t0 = time.perf_counter()
            RenderedSnapshot(snap).body(None)
            cold_runs.append(time.perf_counter() - t0)
        floor_med, cold_med = statistics.median(floor_runs), statistics.median(cold_runs)

        ours = HttpServer(ExporterApp(store, max_requests=16), "127.0.0.1", 0)
        floor = HttpServer(make_wsgi_app(registry), "127.0.0.1", 0)  # type: ignore[arg-type]
        ours.start()
        floor.start()
        stop = threading.Event()

        def keep_collecting() -> None:  # new snapshots keep arriving during the scrapes
            while not stop.wait(0.5):
                clock.now += INTERVAL
                collector.run_cycle()

        feeder = threading.Thread(target=keep_collecting)
        feeder.start()
        try:
            lat_ours = scrape_latencies(f"http://127.0.0.1:{ours.port}/metrics", 10, args.scrapes)
            lat_floor = scrape_latencies(f"http://127.0.0.1:{floor.port}/metrics", 10, args.scrapes)
        finally:
            stop.set()
            feeder.join()
            ours.stop()
            floor.stop()
        p50o, p99o = pct(lat_ours, 0.5), pct(lat_ours, 0.99)
        p50f, p99f = pct(lat_floor, 0.5), pct(lat_floor, 0.99)
        print(f"/metrics over HTTP, 10 concurrent scrapers x {args.scrapes}: "
              f"p50 {p50o * 1e3:.2f} ms, p99 {p99o * 1e3:.2f} ms")  # fmt: skip
        print(f"  floor (same series, pre-built registry, prometheus_client WSGI app): "
              f"p50 {p50f * 1e3:.2f} ms, p99 {p99f * 1e3:.2f} ms")  # fmt: skip
        print(f"  ratio to floor: p50 {p50o / p50f:.2f}x, p99 {p99o / p99f:.2f}x   [goal <= 1.5x]")
        print(f"generate_latest() floor in-process: {floor_med * 1e3:.2f} ms; our cold render of "
              f"a new snapshot: {cold_med * 1e3:.2f} ms ({cold_med / floor_med:.2f}x)")  # fmt: skip

    marks = ", ".join(f"{rss_at[n]:.1f} MiB after {n:,}" for n in sorted(rss_at))
    growth = rss_at[args.cycles] - rss_at[min(rss_at)]
    print(f"RSS: {rss_start:.1f} MiB after imports; {marks} cycles; growth since cycle "
          f"{min(rss_at):,}: {growth:+.2f} MiB   [goal <= 80 MiB, no growth]")  # fmt: skip


if __name__ == "__main__":
    main()
