"""How far back a rule's expression reads (the window its alerts' evidence covers)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from guardian.engine.rules.lookback import lookback_seconds

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(
    ("expr", "minutes"),
    [
        ("up", 0),
        ("up offset 10m", 10),
        ("rate(x[2m])", 2),
        ("max_over_time(x[30m] offset 5m)", 35),
        ("max_over_time(rate(x[2m])[30m:1m])", 32),
        ("max_over_time(rate(x[2m])[30m:1m] offset 1h)", 92),
        ("a[5m] @ 100", 5),  # a range still reads its range before the pinned time
        ("max_over_time(x[5m] @ end())", 5),
        ("x @ 100", 0),
        ("max_over_time(x[10m:]) or y offset 20m", 20),
        ("max_over_time(x[30m:]) or y offset 20m", 30),
        ("not ( valid", 0),
    ],
)
def test_the_longest_path_of_ranges_and_offsets(expr: str, minutes: float) -> None:
    assert lookback_seconds(expr) == minutes * 60


def test_the_shipped_idle_rule_looks_back_over_its_window() -> None:
    pack = yaml.safe_load((ROOT / "rules/guardian/idle.yaml").read_text(encoding="utf-8"))
    rules = {r["alert"]: r["expr"] for g in pack["groups"] for r in g["rules"] if "alert" in r}
    # The facts are one sample each; the allocation's `offset 30m` is the window.
    assert lookback_seconds(rules["GpuIdle"]) == 30 * 60
