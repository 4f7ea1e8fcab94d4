"""The demo profile: every duration in the rule pack divided by a factor, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from guardian_common.errors import ConfigError
from testbed.demo.profile import (
    DemoProfile,
    compress_expr,
    compress_rule_file,
    compress_text,
    write_profile_rules,
)

ROOT = Path(__file__).resolve().parents[4]
PACK = sorted((ROOT / "rules" / "guardian").glob("*.yaml"))
P60 = DemoProfile(factor=60)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5m", "5s"),
        ("30m", "30s"),
        ("1h", "60s"),
        ("2m", "2s"),
        ("90s", "1500ms"),
        ("1h30m", "90s"),
        ("0", "0"),
        ("1s", "17ms"),
        ("1ms", "1ms"),
    ],
)
def test_durations_divide_by_the_factor(text: str, expected: str) -> None:
    assert P60.duration(text) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("max_over_time(x[30m])", "max_over_time(x[30s])"),
        ("max_over_time(rate(x[2m])[30m:1m])", "max_over_time(rate(x[2s])[30s:1s])"),
        ("max_over_time(x[1h:2m])", "max_over_time(x[60s:2s])"),
        ("max_over_time(x[1h:])", "max_over_time(x[60s:])"),
        ("x offset 30m", "x offset 30s"),
        ("count_over_time(x[1h] offset 15m)", "count_over_time(x[60s] offset 15s)"),
        ("x offset -5m", "x offset -5s"),
        ("rate(x[ 5m ])", "rate(x[5s])"),
    ],
)
def test_ranges_subqueries_and_offsets_are_compressed(expr: str, expected: str) -> None:
    assert compress_expr(expr, P60) == expected


def test_string_literals_and_comments_are_left_alone() -> None:
    expr = 'up{job=~".*[5m].*", x="offset 5m"} # not [5m]\n and rate(y[5m])'
    assert compress_expr(expr, P60) == (
        'up{job=~".*[5m].*", x="offset 5m"} # not [5m]\n and rate(y[5s])'
    )


def test_numbers_that_are_not_durations_stay() -> None:
    expr = 'x[5m] < 0.05 and y / 4 - 2 > 1 and z{gpu="5m"}'
    assert compress_expr(expr, P60) == 'x[5s] < 0.05 and y / 4 - 2 > 1 and z{gpu="5m"}'


def test_annotation_text_outside_template_actions() -> None:
    text = 'peak over the last 30m was {{ $value | humanize }} ({{ printf "5m" }}), 5% floor'
    assert compress_text(text, P60) == (
        'peak over the last 30s was {{ $value | humanize }} ({{ printf "5m" }}), 5% floor'
    )


def _rules(text: str) -> dict[str, dict[str, object]]:
    groups = yaml.safe_load(text)["groups"]
    return {f"{r['alert']}/{r['labels'].get('reason', '')}": r for g in groups for r in g["rules"]}


def _window_form_idle_expr() -> str:
    """The guardian pack's earlier, window-based GpuIdle (the benchmark's baseline)."""
    source = ROOT / "bench/packs/guardian-window/idle.yaml"
    return str(yaml.safe_load(source.read_text())["groups"][0]["rules"][0]["expr"])


def test_a_window_rule_is_compressed_exactly() -> None:
    expr = compress_expr(_window_form_idle_expr(), P60)
    assert "[30s]" in expr
    assert "[30s:1s]" in expr
    assert "rate(guardian_gpu_busy_seconds_total[2s])" in expr
    assert "offset 30s" in expr
    assert "< 0.05" in expr
    assert not any(unit in expr for unit in ("30m", "2m", "1m]"))


def test_seconds_thresholds_scale_with_a_floor() -> None:
    source = ROOT / "rules/guardian/pipeline.yaml"
    rules = _rules(compress_rule_file(source.read_text(), str(source), P60))
    stale = str(rules["GpuExporterStale/"]["expr"])
    assert ") > 10\n" in stale  # 120s / 60 = 2s, floored at 10s
    # Stale reads current series only now (issue #28); the 24h inventory of the other
    # pipeline rules scales like every range.
    down = " ".join(str(r["expr"]) for k, r in rules.items() if k.startswith("GpuExporterDown/"))
    assert "[1440s]" in down
    slow = DemoProfile(factor=4)
    rules = _rules(compress_rule_file(source.read_text(), str(source), slow))
    assert ") > 30\n" in str(rules["GpuExporterStale/"]["expr"])


def test_the_idle_rules_fact_windows_scale_and_select_the_exporters_window_label() -> None:
    for name, alerts in (
        ("sharing.yaml", ("GpuShareIdle/",)),
        ("idle.yaml", ("GpuIdle/", "GpuActivityUnknown/no_activity_metric")),
    ):
        source = ROOT / "rules/guardian" / name
        rules = _rules(compress_rule_file(source.read_text(), str(source), P60))
        for alert in alerts:
            expr = str(rules[alert]["expr"])
            assert "1800" not in expr, alert
            assert ">= 30\n" in expr, alert
            assert "< 30\n" in expr, alert
            assert 'window="30m"' not in expr, alert
    share = rules_of("sharing.yaml")["GpuShareIdle/"]
    assert 'guardian_gpu_utilization_peak_ratio{window="30s"}' in str(share["expr"])
    assert share["annotations"]["idle_window"] == "30s"
    memory = str(rules_of("memory.yaml")["GpuMemoryUnderutilized/"]["expr"])
    assert (
        'guardian_gpu_memory_used_peak_bytes{window="1m"}' in memory
    )  # as the exporter spells 60 s
    assert P60.exporter_windows() == ["--memory-peak-window", "1m", "--activity-peak-window", "30s"]


def rules_of(name: str) -> dict[str, dict[str, object]]:
    source = ROOT / "rules/guardian" / name
    return _rules(compress_rule_file(source.read_text(), str(source), P60))


def test_a_missing_seconds_threshold_is_an_error() -> None:
    text = "groups:\n- name: g\n  rules:\n  - alert: GpuExporterStale\n    expr: x > 300\n"
    with pytest.raises(ConfigError, match="expects '> 120'"):
        compress_rule_file(text, "pack.yaml", P60)


def test_labels_and_other_fields_are_kept() -> None:
    source = ROOT / "rules/guardian/memory.yaml"
    original = yaml.safe_load(source.read_text())["groups"][0]["rules"][0]
    rule = yaml.safe_load(compress_rule_file(source.read_text(), str(source), P60))["groups"][0][
        "rules"
    ][0]
    assert rule["labels"] == original["labels"]
    assert rule["annotations"]["runbook_url"] == original["annotations"]["runbook_url"]
    assert rule["for"] == "15s"


def test_the_whole_pack_loads_with_the_engine_loader(tmp_path: Path) -> None:
    written = write_profile_rules(PACK, tmp_path, P60)
    assert [p.name for p in written] == [p.name for p in PACK]
    for path in written:
        assert path.read_text().startswith("# Generated by the demo (`make demo`)")


def test_factor_must_be_positive() -> None:
    with pytest.raises(ValueError, match="factor"):
        DemoProfile(factor=0)


def test_factor_one_changes_no_duration() -> None:
    assert "[1800s]" in compress_expr(_window_form_idle_expr(), DemoProfile(factor=1))
    source = ROOT / "rules/guardian/idle.yaml"
    rule = _rules(compress_rule_file(source.read_text(), str(source), DemoProfile(factor=1)))[
        "GpuIdle/"
    ]
    assert rule["for"] == "300s"
