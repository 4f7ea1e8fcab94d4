"""Before/after tables from the JSON files of two pack_bench.py runs (``--json``).

    .venv/bin/python bench/pack_tables.py BEFORE.json AFTER.json [MORE_BEFORE AFTER ...]

Prints, per pair: the totals, the groups and the rules side by side, as markdown.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None or seconds != seconds else f"{seconds * 1000:,.0f} ms"


def _change(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.0f} %" if before else "-"


def _rule_key(row: dict[str, Any]) -> str:
    return f"{row['group']} | {row['rule']}" + (f" ({row['reason']})" if row["reason"] else "")


def totals(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    print(
        "| GPUs | series | Prometheus before | after | change | engine before | after |"
        " engine / Prometheus after | engine peak RSS after | decisions |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b, a in pairs:
        pb, pa, eb, ea = (
            b["prometheus_total_s"],
            a["prometheus_total_s"],
            b["engine_total_s"],
            a["engine_total_s"],
        )
        verdict = "equal" if a["equal"] and b["equal"] else "DIFFERENT"
        print(
            f"| {a['gpus']:,} | {a['series']:,} | {_ms(pb)} | {_ms(pa)} | {_change(pb, pa)} | "
            f"{_ms(eb)} | {_ms(ea)} | {ea / pa:.2f}x | {a['engine_peak_rss_mib']:.0f} MiB | "
            f"{verdict} |"
        )


def groups(b: dict[str, Any], a: dict[str, Any]) -> None:
    print(f"\n{a['gpus']:,} GPUs, per group:\n")
    print(
        "| group | Prometheus before | after | change | engine before | after "
        "| outside queries before | after |"
    )
    print("|---|---|---|---|---|---|---|---|")
    before = {g["group"]: g for g in b["groups"]}
    for g in a["groups"]:
        o = before.get(g["group"], {})
        print(
            f"| {g['group']} | {_ms(o.get('prometheus_s'))} | {_ms(g['prometheus_s'])} | "
            f"{_change(o.get('prometheus_s', 0), g['prometheus_s'])} | {_ms(o.get('engine_s'))} | "
            f"{_ms(g['engine_s'])} | {_ms(o.get('engine_outside_s'))} | "
            f"{_ms(g['engine_outside_s'])} |"
        )


def rules(b: dict[str, Any], a: dict[str, Any]) -> None:
    print(f"\n{a['gpus']:,} GPUs, per rule:\n")
    print("| group | rule | Prometheus before | after | change | engine before | after | alerts |")
    print("|---|---|---|---|---|---|---|---|")
    before = {_rule_key(r): r for r in b["rules"]}
    for r in a["rules"]:
        o = before.get(_rule_key(r), {})
        print(
            f"| {_rule_key(r)} | {_ms(o.get('prometheus_s'))} | {_ms(r['prometheus_s'])} | "
            f"{_change(o.get('prometheus_s', 0), r['prometheus_s'])} | {_ms(o.get('engine_s'))} | "
            f"{_ms(r.get('engine_s'))} | {r.get('alerts_last', '')} |"
        )


def main(paths: list[str]) -> None:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    pairs = list(zip(runs[::2], runs[1::2], strict=True))
    totals(pairs)
    for b, a in pairs:
        groups(b, a)
        rules(b, a)


if __name__ == "__main__":
    main(sys.argv[1:])
