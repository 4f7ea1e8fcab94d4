"""The pack benchmark's figures: medians per group and per rule, the equality check, and
the printed tables (markdown, so they paste into bench/README.md)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml
from pack_prometheus import PrometheusRun

AlertSet = set[tuple[tuple[tuple[str, str], ...], str]]


def rule_names(path: Path) -> dict[str, list[tuple[str, str, str]]]:
    """group -> [(kind, name, reason)] in file order."""
    doc = yaml.safe_load(path.read_text()) or {}
    out: dict[str, list[tuple[str, str, str]]] = {}
    for group in doc.get("groups") or []:
        out[group["name"]] = [
            (
                "alerting" if "alert" in r else "recording",
                r.get("alert") or r.get("record"),
                (r.get("labels") or {}).get("reason", ""),
            )
            for r in group.get("rules") or []
        ]
    return out


def read_engine(path: Path) -> dict[str, Any]:
    evaluations: dict[str, list[dict[str, Any]]] = defaultdict(list)
    alerts: dict[tuple[str, float, int], AlertSet] = defaultdict(set)
    peak = float("nan")
    with path.open() as lines:
        for line in lines:
            item = json.loads(line)
            if "alert" in item:
                group, ts, index, labels, state = item["alert"]
                alerts[(group, ts, index)].add((tuple(sorted(labels.items())), state))
            elif "peak_rss_mib" in item:
                peak = item["peak_rss_mib"]
            else:
                evaluations[item["group"]].append(item)
    return {"evaluations": evaluations, "alerts": alerts, "peak_rss_mib": peak}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _timed(items: list[Any]) -> list[Any]:
    return items[1:] if len(items) > 1 else items


def _compare(run: PrometheusRun, engine: dict[str, Any]) -> tuple[int, int, list[str]]:
    """(compared rule evaluations, mismatching ones, examples)."""
    compared = mismatched = 0
    examples: list[str] = []
    for (file, name), evaluations in run.evaluations.items():
        key = f"{file};{name}"
        for ev in evaluations:
            alerting = [r for r in ev.rules if r.kind == "alerting"]
            for index, rule in enumerate(alerting):
                theirs = {(tuple(sorted(labels.items())), state) for labels, state in rule.alerts}
                ours = engine["alerts"].get((key, round(ev.ts, 3), index), set())
                compared += 1
                if theirs != ours:
                    mismatched += 1
                    if len(examples) < 6:
                        only_p = sorted(theirs - ours)[:2]
                        only_e = sorted(ours - theirs)[:2]
                        examples.append(
                            f"{name}/{rule.name} at {ev.ts}: prometheus only {only_p}, "
                            f"engine only {only_e}"
                        )
    return compared, mismatched, examples


def figures(run: PrometheusRun, engine: dict[str, Any], files: list[Path]) -> dict[str, Any]:
    names: dict[str, list[tuple[str, str, str]]] = {}
    for f in files:
        names |= rule_names(f)
    groups: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    for (file, name), evaluations in sorted(run.evaluations.items(), key=lambda kv: kv[0][1]):
        ours = engine["evaluations"].get(f"{file};{name}", [])
        recorded = {round(e.ts, 3) for e in evaluations}
        ours = [e for e in ours if round(e["ts"], 3) in recorded]
        prom_s = _median([e.seconds for e in _timed(evaluations)])
        eng = _timed(ours)
        cycle, query = _median([e["cycle"] for e in eng]), _median([e["query"] for e in eng])
        groups.append(
            {
                "group": name,
                "rules": len(evaluations[0].rules),
                "prometheus_s": prom_s,
                "engine_s": cycle,
                "engine_query_s": query,
                "engine_outside_s": _median([e["cycle"] - e["query"] for e in eng]),
                # The process's CPU per cycle (queries run at once overlap: their seconds
                # added up can exceed the cycle).
                "engine_cpu_s": _median([e.get("cpu", float("nan")) for e in eng]),
                "queries": _median([e["queries"] for e in eng]),
                "errors": sorted({err for e in ours for err in e["errors"]})[:3],
            }
        )
        alert_index = 0
        for index, (kind, rule_name, reason) in enumerate(names.get(name, [])):
            prom_rule = _median([e.rules[index].seconds for e in _timed(evaluations)])
            row: dict[str, Any] = {
                "group": name,
                "rule": rule_name,
                "reason": reason,
                "kind": kind,
                "prometheus_s": prom_rule,
            }
            if kind == "alerting":
                row["engine_s"] = _median([e["rules"][alert_index][1] for e in eng])
                counts = [len(e.rules[index].alerts) for e in evaluations]
                row["alerts_last"] = counts[-1]
                row["firing_last"] = sum(
                    1 for _, s in evaluations[-1].rules[index].alerts if s == "firing"
                )
                row["alerts_max"] = max(counts)
                alert_index += 1
            rules.append(row)
    compared, mismatched, examples = _compare(run, engine)
    prom_total = sum(g["prometheus_s"] for g in groups)
    engine_total = sum(g["engine_s"] for g in groups)
    return {
        "groups": groups,
        "rules": rules,
        "prometheus_total_s": prom_total,
        "engine_total_s": engine_total,
        "engine_outside_total_s": sum(g["engine_outside_s"] for g in groups),
        "engine_cpu_total_s": sum(g["engine_cpu_s"] for g in groups),
        "compared": compared,
        "mismatched": mismatched,
        "examples": examples,
        "equal": mismatched == 0,
        "silent": [
            f"{r['rule']}{'/' + r['reason'] if r['reason'] else ''}"
            for r in rules
            if r["kind"] == "alerting" and not r["alerts_max"]
        ],
        "engine_peak_rss_mib": engine["peak_rss_mib"],
        "evaluations": min(len(v) for v in run.evaluations.values()),
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds == seconds else "-"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_report(f: dict[str, Any]) -> None:
    print(
        f"\n### {f['pack']} pack, {f['gpus']:,} GPUs, {f['series']:,} series, "
        f"{f['samples']:,} samples, evaluated every {f['interval']}s "
        f"(medians of {f['evaluations'] - 1} timed evaluations; the engine with "
        f"{f.get('concurrent_queries', 1)} concurrent queries, "
        f"{f.get('query_shards', 1)} query shards)\n"
    )
    print("| group | rules | Prometheus | engine | ratio | engine CPU | queries/cycle |")
    print("|---|---|---|---|---|---|---|")
    for g in f["groups"]:
        print(
            f"| {g['group']} | {g['rules']} | {_ms(g['prometheus_s'])} | {_ms(g['engine_s'])} | "
            f"{_ratio(g['engine_s'], g['prometheus_s'])} | {_ms(g['engine_cpu_s'])} | "
            f"{g['queries']:g} |"
        )
    p, e = f["prometheus_total_s"], f["engine_total_s"]
    print(
        f"| **all groups** | | **{_ms(p)}** | **{_ms(e)}** | **{_ratio(e, p)}** | "
        f"{_ms(f['engine_cpu_total_s'])} | |"
    )
    print("\n| group | rule | Prometheus | engine | ratio | alerts (firing) at the last slot |")
    print("|---|---|---|---|---|---|")
    for r in f["rules"]:
        name = r["rule"] + (f" ({r['reason']})" if r["reason"] else "")
        if r["kind"] == "recording":
            print(f"| {r['group']} | record {name} | {_ms(r['prometheus_s'])} | (Prometheus) | | |")
            continue
        print(
            f"| {r['group']} | {name} | {_ms(r['prometheus_s'])} | {_ms(r['engine_s'])} | "
            f"{_ratio(r['engine_s'], r['prometheus_s'])} | "
            f"{r['alerts_last']} ({r['firing_last']}) |"
        )
    print(
        f"\nRSS: engine peak {f['engine_peak_rss_mib']:.0f} MiB (goal <= 100 MiB); Prometheus "
        f"{f['prometheus_rss_mib'][0]:.0f} MiB now, {f['prometheus_rss_mib'][1]:.0f} MiB peak"
    )
    print(f"goal engine <= 0.5x Prometheus: {_ratio(e, p)}")
    if "in_order" in f:
        print_in_order(f)
    for g in f["groups"]:
        if g["errors"]:
            print(f"engine errors in {g['group']}: {g['errors']}")
    if f["silent"]:
        print(f"rules with no alert anywhere in the fleet: {', '.join(f['silent'])}")
    verdict = "EQUAL" if f["equal"] else "DIFFERENT"
    print(
        f"decisions: {verdict} ({f['compared']} rule evaluations compared, "
        f"{f['mismatched']} differ)"
    )
    for line in f["examples"]:
        print(f"  {line}")


def print_in_order(f: dict[str, Any]) -> None:
    """The same-run baseline: the engine with its queries one at a time."""
    base = f["in_order"]
    slow = {g["group"]: g for g in base["groups"]}
    print(
        f"\nthe engine with {f['concurrent_queries']} concurrent queries and "
        f"{f.get('query_shards', 1)} query shards against the same engine in order "
        "(concurrent_queries 1, query_shards 1), same server, same slots:\n"
    )
    print("| group | in order | at once | ratio | CPU in order | CPU at once |")
    print("|---|---|---|---|---|---|")
    for g in f["groups"]:
        b = slow[g["group"]]
        print(
            f"| {g['group']} | {_ms(b['engine_s'])} | {_ms(g['engine_s'])} | "
            f"{_ratio(g['engine_s'], b['engine_s'])} | {_ms(b['engine_cpu_s'])} | "
            f"{_ms(g['engine_cpu_s'])} |"
        )
    e, b = f["engine_total_s"], base["engine_total_s"]
    print(
        f"| **all groups** | **{_ms(b)}** | **{_ms(e)}** | **{_ratio(e, b)}** | "
        f"{_ms(base['engine_cpu_total_s'])} | {_ms(f['engine_cpu_total_s'])} |"
    )
    print(
        f"in order: engine / Prometheus {_ratio(b, f['prometheus_total_s'])}, peak RSS "
        f"{base['engine_peak_rss_mib']:.0f} MiB, decisions "
        f"{'EQUAL' if base['equal'] else 'DIFFERENT'} ({base['mismatched']} differ)"
    )
