"""Rule-pack benchmark (issue #21): the shipped pack's cost on Prometheus and on our engine,
side by side on one fleet, and a check that both decide the same alerts.

1. A fleet (``--gpus``, 8 a node, ~80 % allocated) is generated as the exporter reports it
   (``--pack guardian``: GPU Guardian's exporter, every 15 s; ``--pack dcgm``:
   dcgm-exporter with the labels ``guardian dcgm-config`` sets up, every 30 s), with a mix
   that makes every alert of the pack fire somewhere (bench/fleet_*.py). 2 h of history
   end at the time the first evaluation is expected.
2. A real Prometheus is filled with it (remote write into the head, or promtool blocks),
   then given the pack (``rule_files``) and evaluates it on its own schedule; each group's
   ``evaluationTime`` and each rule's are read from ``/api/v1/rules`` after every
   evaluation, with the active alerts.
3. Rule evaluation is switched off and our engine (a child process) evaluates the same
   files against the same server at the same slots, with its SQLite state store and
   ``--concurrent-queries`` and ``--query-shards`` (``prometheus.concurrent_queries``
   and ``prometheus.query_shards``, default their defaults); then, as the same-run
   baseline, once more with its queries one at a time and whole.
4. Printed: per group and per rule, Prometheus's time, the engine's, the ratio, the
   engine process's CPU, queries per cycle; both RSS figures; the engine at once
   against in order; and the equality check, for both engine runs: the same alert label
   sets in the same state (pending/firing) at every slot.
   Medians are over ``--evaluations`` evaluations (the first after the reload is not timed).

    .venv/bin/python bench/pack_bench.py [--gpus 2000|10000|25000] [--pack guardian|dcgm]
        [--rules DIR] [--evaluations 5] [--interval 30] [--concurrent-queries 4]
        [--query-shards 2] [--json OUT]

``--rules`` benchmarks another copy of the pack (e.g. ``git show`` of an older one); its
files must keep the shipped names. Exit status 1 when the decisions differ.

``--compare-packs`` (issue #33, pack_compare.py): the window-based guardian pack
(``--window-rules``, default bench/packs/guardian-window) and the shipped one on the same
Prometheus and fleet, both loaded at once (groups renamed apart); per group both packs'
Prometheus and engine times, both RSS figures, and the decisions compared between the
packs as well as against the engine. ``--idle-window 2h`` renders the packs (and the
fleet's utilization peak) with another idle window; the fleet's history is then the window
and 30 minutes more (at least 2 h).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import fleet_load
import pack_compare
import pack_prometheus
import pack_report
from fleet_core import Fleet, Timeline

from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus
from guardian.app.settings.clients import PrometheusSettings
from guardian.engine.rules.slots import slot_offset_ns

ROOT = Path(__file__).resolve().parent.parent
HISTORY_S = 2 * 3600


def _prep_estimate(gpus: int, history_s: int) -> float:
    # Generation and remote write at ~500k samples/s here (25,000 GPUs, 2 h with the
    # idle facts: 6 min), plus Prometheus's start; a late start only moves the fleet's
    # events by as much.
    return 30.0 + gpus * 0.016 * history_s / HISTORY_S


def history_seconds(idle_window_s: int) -> int:
    """2 h, or the idle window and 30 minutes more, so that every device was observed for
    the whole window (and allocated for it) before the first evaluation."""
    return max(HISTORY_S, idle_window_s + 1800)


def build_fleet(
    pack: str, gpus: int, t: Timeline, seed: int, idle_window_s: int
) -> tuple[Fleet, set[str]]:
    """The fleet, and the nodes whose devices the exporter did not observe for the whole
    window (left out of the comparison between the packs)."""
    if pack == "dcgm":
        from fleet_dcgm import DcgmFleet

        return DcgmFleet(gpus, t, seed).build(), set()
    from fleet_guardian import GuardianFleet

    fleet = GuardianFleet(gpus, t, seed, idle_window_s)
    unobserved = {n.name for n in fleet.nodes if n.fault in pack_compare.UNOBSERVED_FAULTS}
    return fleet.build(), unobserved


def rule_files(args: argparse.Namespace) -> list[Path]:
    root = Path(args.rules) if args.rules else ROOT / "rules" / args.pack
    return sorted(p.resolve() for p in root.glob("*.yaml"))


def placed(files: list[Path], work: Path, interval: float) -> list[Path]:
    """Copies of the files in a folder whose path spreads the groups' slots evenly over the
    interval. A group's slot offset is a hash of its file path and name, so with the files
    where they lie two big groups may start together and slow each other down (on 2
    cores), differently from one run, or one checkout, to the next."""
    groups = [(f.name, g) for f in files for g in pack_report.rule_names(f)]
    best = (-1.0, work / "rules-0")
    for k in range(500):
        folder = work / f"rules-{k}"
        offsets = sorted(slot_offset_ns(str(folder / n), g, interval) / 1e9 for n, g in groups)
        gaps = [b - a for a, b in itertools.pairwise(offsets)] + [
            offsets[0] + interval - offsets[-1]
        ]
        if min(gaps) > best[0]:
            best = (min(gaps), folder)
        if min(gaps) >= 0.8 * interval / len(groups):
            break
    best[1].mkdir(parents=True)
    for f in files:
        shutil.copy(f, best[1] / f.name)
    return [best[1] / f.name for f in files]


def run_engine(
    url: str,
    files: list[Path],
    slots: dict[str, list[float]],
    args: argparse.Namespace,
    work: Path,
    concurrency: int,
    shards: int = 1,
    tag: str = "",
) -> Path:
    job = work / f"engine-job-{tag}{concurrency}.json"
    out = work / f"engine-{tag}{concurrency}.jsonl"
    job.write_text(
        json.dumps(
            {
                "url": url,
                "interval": float(args.interval),
                "rule_files": [str(f) for f in files],
                "slots": slots,
                "concurrent_queries": concurrency,
                "query_shards": shards,
            }
        )
    )
    subprocess.run(
        [sys.executable, str(Path(__file__).with_name("pack_engine.py")), str(job), str(out)],
        check=True,
        timeout=3600,
        cwd=ROOT,
    )
    return out


def _default_concurrency() -> int:
    field = PrometheusSettings.model_fields.get("concurrent_queries")
    return int(field.default) if field is not None else 1  # an older checkout: in order


def _default_shards() -> int:
    field = PrometheusSettings.model_fields.get("query_shards")
    return int(field.default) if field is not None else 1  # an older checkout: whole


def engine_slots(run: pack_prometheus.PrometheusRun, interval: float) -> dict[str, list[float]]:
    """Every slot from each group's first recorded evaluation to its last (a slot the
    poller missed is still evaluated, so the engine's state follows the same path)."""
    slots: dict[str, list[float]] = {}
    for (file, name), evaluations in run.evaluations.items():
        first, last = evaluations[0].ts, evaluations[-1].ts
        count = round((last - first) / interval)
        slots[f"{file};{name}"] = [round(first + k * interval, 3) for k in range(count + 1)]
    return slots


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--gpus", type=int, default=2000, help="2000, 10000 or 25000 (any multiple of 8)"
    )
    parser.add_argument("--pack", choices=("guardian", "dcgm"), default="guardian")
    parser.add_argument("--rules", help="directory of the pack's files (default: rules/<pack>)")
    parser.add_argument(
        "--compare-packs",
        action="store_true",
        help="the window-based guardian pack (--window-rules) against --rules, side by side",
    )
    parser.add_argument("--window-rules", default=str(ROOT / "bench/packs/guardian-window"))
    parser.add_argument(
        "--idle-window", default="30m", help="the guardian packs' idle window (30m, 2h)"
    )
    parser.add_argument("--evaluations", type=int, default=5)
    parser.add_argument("--interval", type=int, default=30, help="evaluation interval, seconds")
    parser.add_argument("--load", choices=("remote-write", "promtool"), default="remote-write")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--concurrent-queries",
        type=int,
        default=_default_concurrency(),
        help="the engine's prometheus.concurrent_queries (default: its default)",
    )
    parser.add_argument(
        "--query-shards",
        type=int,
        default=_default_shards(),
        help="the engine's prometheus.query_shards at once (default: its default; "
        "in order always 1)",
    )
    parser.add_argument("--json", help="write the figures to this file too")
    parser.add_argument("--keep", help="copy the engine's output and Prometheus's evaluations here")
    return parser.parse_args()


def sources(args: argparse.Namespace, work: Path) -> tuple[list[Path], list[Path]]:
    """(the pack's files, the window pack's: only with --compare-packs), rendered with
    --idle-window."""
    if args.compare_packs:
        new = Path(args.rules) if args.rules else ROOT / "rules" / "guardian"
        return pack_compare.render_packs(
            new, Path(args.window_rules), work / "src", args.idle_window
        )
    files = rule_files(args)
    if args.idle_window == "30m":
        return files, []
    seconds = pack_compare.parse_window(args.idle_window)
    (work / "src").mkdir()
    for f in files:
        (work / "src" / f.name).write_text(
            pack_compare.render_text(f.read_text(), args.idle_window, seconds)
        )
    return [work / "src" / f.name for f in files], []


def load(args: argparse.Namespace, fleet: Fleet, t: Timeline, history_s: int, work: Path) -> Any:
    """A Prometheus holding the fleet, started at the time the fleet expects."""
    began = time.monotonic()
    chunk = 900 // t.step
    if args.load == "promtool":
        fleet_load.promtool_blocks(fleet, t, work / "prometheus" / "data", chunk)
    prom = start_prometheus(
        work / "prometheus",
        PrometheusOptions(ready_timeout=600, extra_args=["--storage.tsdb.max-block-duration=2h"]),
    )
    try:
        if args.load == "remote-write":
            fleet_load.remote_write(fleet, t, prom.url, chunk)
    except BaseException:
        prom.stop()
        raise
    late = time.time() - t.start - history_s
    print(
        f"prometheus: loaded in {time.monotonic() - began:.0f}s "
        f"({abs(late) / 60:.1f} min {'after' if late > 0 else 'before'} the expected start)",
        flush=True,
    )
    if late < 0:
        time.sleep(-late)
    return prom


def evaluate(prom: Any, files: list[Path], args: argparse.Namespace) -> Any:
    """Prometheus's own evaluations of ``files``; rule evaluation off again after."""
    pack_prometheus.reload_rules(prom.url, prom.config_path, files, f"{args.interval}s")
    groups = sum(len(pack_report.rule_names(f)) for f in files)
    timeout = (args.evaluations + 3) * args.interval + 600
    run = pack_prometheus.watch(prom.url, groups, args.evaluations, args.interval, timeout)
    pack_prometheus.reload_rules(prom.url, prom.config_path, [], f"{args.interval}s")
    return run


def one_pack(
    prom: Any, run: Any, files: list[Path], args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """The engine on the pack, at once and (the same-run baseline) in order."""
    slots = engine_slots(run, args.interval)
    out = run_engine(prom.url, files, slots, args, work, args.concurrent_queries, args.query_shards)
    engine = pack_report.read_engine(out)
    in_order = None
    if args.concurrent_queries > 1:
        in_order = pack_report.read_engine(run_engine(prom.url, files, slots, args, work, 1))
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(args.keep) / "engine.jsonl")
        (Path(args.keep) / "prometheus.json").write_text(
            json.dumps(pack_prometheus.to_json(run, alerts=True))
        )
    return {"engine": engine, "in_order": in_order}


def both_packs(
    prom: Any,
    run: Any,
    files: tuple[list[Path], list[Path]],
    args: argparse.Namespace,
    work: Path,
    unobserved: set[str],
) -> dict[str, Any]:
    """The engine on each pack (at once; a child process each), and the comparisons."""
    out: dict[str, Any] = {}
    for side, side_run, side_files in zip(
        ("shipped", "window"), pack_compare.split_run(run), files, strict=True
    ):
        slots = engine_slots(side_run, args.interval)
        path = run_engine(
            prom.url,
            side_files,
            slots,
            args,
            work,
            args.concurrent_queries,
            args.query_shards,
            tag=side,
        )
        out[side] = pack_report.figures(side_run, pack_report.read_engine(path), side_files)
    out["summary"] = pack_compare.summary(out["shipped"], out["window"])
    out["decisions_between_packs"] = pack_compare.compare_decisions(
        *pack_compare.split_run(run), unobserved, float(args.interval)
    )
    out["evaluations"] = min(out["shipped"]["evaluations"], out["window"]["evaluations"])
    return out


def _meta(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "gpus": args.gpus,
        "pack": args.pack,
        "interval": args.interval,
        "concurrent_queries": args.concurrent_queries,
        "query_shards": args.query_shards,
        "idle_window": args.idle_window,
        "load": list(os.getloadavg()),
    }


def main() -> int:
    args = parse_args()
    window_s = pack_compare.parse_window(args.idle_window)
    history_s = history_seconds(window_s)
    step = 30 if args.pack == "dcgm" else 15
    ready_at = time.time() + _prep_estimate(args.gpus, history_s)
    tail_s = (args.evaluations + 3) * args.interval + 900
    start = int(ready_at - history_s) // 60 * 60
    t = Timeline(
        start=start, step=step, steps=(history_s + tail_s) // step, anchor=history_s // step
    )
    began = time.monotonic()
    fleet, unobserved = build_fleet(args.pack, args.gpus, t, args.seed, window_s)
    series, samples = fleet.series_count(), fleet.sample_count()
    print(
        f"fleet: {args.pack}, {args.gpus} GPUs, {series:,} series, {samples:,} samples "
        f"({time.monotonic() - began:.0f}s to generate, {history_s / 3600:g} h of history)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="pack-bench-") as tmp:
        work = Path(tmp)
        packs = sources(args, work)
        files = placed(packs[0] + packs[1], work, float(args.interval))
        placed_packs = (files[: len(packs[0])], files[len(packs[0]) :])
        prom = load(args, fleet, t, history_s, work)
        del fleet
        try:
            run = evaluate(prom, files, args)
            prom_rss = pack_prometheus.process_rss_mib(prom.pid)
            if args.compare_packs:
                result = both_packs(prom, run, placed_packs, args, work, unobserved)
            else:
                result = one_pack(prom, run, files, args, work)
        finally:
            prom.stop()
    meta = _meta(args) | {"series": series, "samples": samples, "prometheus_rss_mib": prom_rss}
    if args.compare_packs:
        figures = result | meta
        pack_compare.print_summary(figures)
        equal = all(figures[k]["equal"] for k in ("shipped", "window", "decisions_between_packs"))
    else:
        figures = pack_report.figures(run, result["engine"], packs[0]) | meta
        if result["in_order"] is not None:
            figures["in_order"] = pack_report.figures(run, result["in_order"], packs[0])
        pack_report.print_report(figures)
        equal = figures["equal"] and figures.get("in_order", figures)["equal"]
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
