"""``pack_bench.py --compare-packs`` (issue #33): the window-based guardian pack (range
selectors over the idle window, kept in bench/packs/guardian-window/) and the shipped one
(one sample per series: the exporter's idle facts) on one Prometheus and one fleet.

Only the files that differ between the two packs are loaded (the pipeline, platform and
unallocated groups are the same text in both). The window pack's files are copied as
``window-<name>.yaml`` with ``-window`` after each group's name, so both evaluate side by
side. ``--idle-window`` renders both with another idle window (the window pack's
``[30m]``, ``[30m:1m]``, ``offset 30m`` and ``1800``; the shipped pack's ``1800``,
``offset 30m`` and ``window="30m"``); the fleet then emits its utilization peak with that
window.

The decisions are compared between the packs on Prometheus's own alerts: each evaluation
of a shipped group against the window group's evaluation nearest in time, rule by rule,
the set of alert label sets (the state left out: the two groups' slots differ). Alerts of
the nodes whose devices the exporter did not observe for the whole window (NVML down,
failing scrapes, vanished or removed exporters, a gap) are left out: there the window pack
reads what is left of the window and the shipped one reads nothing, by design.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pack_prometheus import GroupEval, PrometheusRun

SUFFIX = "-window"
PREFIX = "window-"
UNOBSERVED_FAULTS = ("nvml_down", "scrape_failing", "vanished", "removed", "gap")


def parse_window(text: str) -> int:
    match = re.fullmatch(r"(\d+)([mh])", text)
    if not match:
        raise ValueError(f"--idle-window: {text!r} is not like 30m or 2h")
    return int(match[1]) * (3600 if match[2] == "h" else 60)


def render_text(text: str, window: str, seconds: int) -> str:
    if window == "30m":
        return text
    text = text.replace("[30m]", f"[{window}]").replace("[30m:1m]", f"[{window}:1m]")
    text = text.replace("offset 30m", f"offset {window}")
    text = text.replace('window="30m"', f'window="{window}"')
    return re.sub(r"\b1800\b", str(seconds), text)


def _check_rendered(path: Path, window: str) -> None:
    """No expression keeps the 30-minute window."""
    if window == "30m":
        return
    doc = yaml.safe_load(path.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if re.search(r"\b1800\b|30m", rule["expr"]):
                raise ValueError(f"{path}: {rule.get('alert')} keeps the 30m window")


def render_packs(new: Path, old: Path, dest: Path, window: str) -> tuple[list[Path], list[Path]]:
    """(shipped files, window files) that differ, rendered with ``window`` into ``dest``;
    the window pack's groups renamed apart."""
    seconds = parse_window(window)
    names = sorted(
        p.name
        for p in new.glob("*.yaml")
        if (old / p.name).exists() and (old / p.name).read_text() != p.read_text()
    )
    dest.mkdir(parents=True, exist_ok=True)
    shipped, windowed = [], []
    for name in names:
        out = dest / name
        out.write_text(render_text((new / name).read_text(), window, seconds))
        shipped.append(out)
        text = render_text((old / name).read_text(), window, seconds)
        text = re.sub(r"(?m)^(  - name: )(\S+)$", rf"\g<1>\g<2>{SUFFIX}", text)
        out = dest / f"{PREFIX}{name}"
        out.write_text(text)
        windowed.append(out)
    for path in shipped + windowed:
        _check_rendered(path, window)
    return shipped, windowed


def split_run(run: PrometheusRun) -> tuple[PrometheusRun, PrometheusRun]:
    """(the shipped pack's groups, the window pack's)."""
    shipped, windowed = PrometheusRun(), PrometheusRun()
    for key, evaluations in run.evaluations.items():
        side = windowed if Path(key[0]).name.startswith(PREFIX) else shipped
        side.evaluations[key] = evaluations
    return shipped, windowed


def _alert_sets(ev: GroupEval, skip: set[str]) -> tuple[dict[str, set[Any]], int]:
    sets: dict[str, set[Any]] = {}
    skipped = 0
    for index, rule in enumerate(r for r in ev.rules if r.kind == "alerting"):
        keep = set()
        for labels, _state in rule.alerts:
            if labels.get("node") in skip:
                skipped += 1
                continue
            keep.add(tuple(sorted(labels.items())))
        sets[f"{index}:{rule.name}"] = keep
    return sets, skipped


def compare_decisions(
    shipped: PrometheusRun, windowed: PrometheusRun, skip: set[str], interval: float
) -> dict[str, Any]:
    """Each shipped evaluation against the window group's nearest one (within an
    interval): the same alert label sets, rule by rule."""
    by_name = {name.removesuffix(SUFFIX): evs for (_, name), evs in windowed.evaluations.items()}
    compared = mismatched = skipped = 0
    examples: list[str] = []
    for (_, name), evaluations in sorted(shipped.evaluations.items()):
        theirs = by_name.get(name, [])
        for ev in evaluations:
            near = min(theirs, key=lambda w: abs(w.ts - ev.ts), default=None)
            if near is None or abs(near.ts - ev.ts) > interval:
                continue
            ours, n1 = _alert_sets(ev, skip)
            other, n2 = _alert_sets(near, skip)
            skipped += n1 + n2
            for rule in sorted(set(ours) | set(other)):
                a, b = ours.get(rule, set()), other.get(rule, set())
                compared += 1
                if a != b:
                    mismatched += 1
                    if len(examples) < 8:
                        examples.append(
                            f"{name} {rule} at {ev.ts} / {near.ts}: shipped only "
                            f"{_short(a - b)}, window only {_short(b - a)}"
                        )
    return {
        "compared": compared,
        "mismatched": mismatched,
        "skipped_alerts": skipped,
        "skipped_nodes": len(skip),
        "examples": examples,
        "equal": mismatched == 0 and compared > 0,
    }


def _short(alerts: set[Any]) -> str:
    out = []
    for labels in sorted(alerts)[:2]:
        d = dict(labels)
        out.append(f"{d.get('alertname')}{{{d.get('node')},{d.get('uuid')},{d.get('pod')}}}")
    return f"{len(alerts)} {out}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds == seconds else "-"


def _x(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b and a == a and b == b else "-"


def summary(shipped: dict[str, Any], windowed: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per group: both packs' Prometheus and engine medians."""
    old = {g["group"].removesuffix(SUFFIX): g for g in windowed["groups"]}
    rows = []
    for g in shipped["groups"]:
        w = old.get(g["group"], {})
        rows.append(
            {
                "group": g["group"],
                "prometheus_window_s": w.get("prometheus_s", float("nan")),
                "prometheus_shipped_s": g["prometheus_s"],
                "engine_window_s": w.get("engine_s", float("nan")),
                "engine_shipped_s": g["engine_s"],
                "queries_window": w.get("queries", float("nan")),
                "queries_shipped": g["queries"],
            }
        )
    return rows


def print_summary(f: dict[str, Any]) -> None:
    rows, cmp = f["summary"], f["decisions_between_packs"]
    print(
        f"\n### window pack against shipped pack, {f['gpus']:,} GPUs, idle window "
        f"{f['idle_window']}, {f['series']:,} series, {f['samples']:,} samples, every "
        f"{f['interval']}s (medians of {f['evaluations'] - 1} timed evaluations)\n"
    )
    print(
        "| group | Prometheus, window pack | shipped pack | shipped / window | "
        "engine, window pack | shipped pack | engine / Prometheus, shipped |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['group']} | {_ms(r['prometheus_window_s'])} | "
            f"{_ms(r['prometheus_shipped_s'])} | "
            f"{_x(r['prometheus_shipped_s'], r['prometheus_window_s'])} | "
            f"{_ms(r['engine_window_s'])} | {_ms(r['engine_shipped_s'])} | "
            f"{_x(r['engine_shipped_s'], r['prometheus_shipped_s'])} |"
        )
    tot = {k: sum(r[k] for r in rows) for k in rows[0] if k.endswith("_s")}
    print(
        f"| **all three** | **{_ms(tot['prometheus_window_s'])}** | "
        f"**{_ms(tot['prometheus_shipped_s'])}** | "
        f"**{_x(tot['prometheus_shipped_s'], tot['prometheus_window_s'])}** | "
        f"**{_ms(tot['engine_window_s'])}** | **{_ms(tot['engine_shipped_s'])}** | "
        f"**{_x(tot['engine_shipped_s'], tot['prometheus_shipped_s'])}** |"
    )
    rss = f["prometheus_rss_mib"]
    print(
        f"\nRSS: engine peak, window pack {f['window']['engine_peak_rss_mib']:.0f} MiB, shipped "
        f"pack {f['shipped']['engine_peak_rss_mib']:.0f} MiB (goal <= 100 MiB); Prometheus "
        f"(both packs, the fleet) {rss[0]:.0f} MiB now, {rss[1]:.0f} MiB peak"
    )
    for side in ("window", "shipped"):
        s = f[side]
        print(
            f"{side} pack: engine against Prometheus "
            f"{'EQUAL' if s['equal'] else 'DIFFERENT'} ({s['compared']} rule evaluations, "
            f"{s['mismatched']} differ); no alert anywhere: {', '.join(s['silent']) or 'none'}"
        )
        for line in s["examples"]:
            print(f"  {line}")
    print(
        f"between the packs (Prometheus's alerts, label sets): "
        f"{'EQUAL' if cmp['equal'] else 'DIFFERENT'} ({cmp['compared']} rule evaluations "
        f"compared, {cmp['mismatched']} differ; {cmp['skipped_alerts']} alerts of "
        f"{cmp['skipped_nodes']} nodes not observed for the whole window left out)"
    )
    for line in cmp["examples"]:
        print(f"  {line}")
