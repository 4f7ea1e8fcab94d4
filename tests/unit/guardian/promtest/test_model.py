"""Loading a promtool test file: strict fields, lines in errors, promtool's defaults."""

from __future__ import annotations

import pytest

from guardian.engine.promtest.model import parse_test_file
from guardian.engine.promtest.notation import STALE
from guardian_common.errors import ConfigErrors

FILE = """\
rule_files: [rules/*.yaml]
evaluation_interval: 30s
group_eval_order: [b, a]
tests:
  - name: t1
    interval: 1m
    external_labels: {cluster: c1}
    external_url: https://prom.example
    input_series:
      - series: m{id="a"}
        values: 0x70
      - series: n
        values: 1 stale
    alert_rule_test:
      - eval_time: 5m
        alertname: A
        exp_alerts: &alerts
          - exp_labels: {id: a, on: yes}
            exp_annotations: {summary: x}
      - eval_time: 6m
        alertname: A
        exp_alerts: *alerts
    promql_expr_test:
      - expr: m
        eval_time: 1h30m
        exp_samples:
          - labels: m{id="a"}
            value: 1e3
  - input_series: []
"""


def test_a_full_file() -> None:
    test = parse_test_file(FILE, "t.yaml")

    assert test.rule_files == ("rules/*.yaml",)
    assert test.evaluation_interval_ms == 30_000
    assert test.group_eval_order == ("b", "a")
    first, second = test.tests
    assert first.name == "t1"
    assert first.interval_ms == 60_000
    assert first.external_labels == {"cluster": "c1"}
    assert first.external_url == "https://prom.example"
    # Unquoted scalars keep their text: YAML 1.1 would read 0x70 as 112 and yes as True.
    assert first.input_series[0].points == (0.0,) * 71
    assert first.input_series[0].labels == {"__name__": "m", "id": "a"}
    assert first.input_series[1].points == (1.0, STALE)
    assert first.uses_stale
    assert first.alert_tests[0].exp_alerts[0].labels == {"id": "a", "on": "yes"}
    assert first.alert_tests[1].exp_alerts == first.alert_tests[0].exp_alerts
    assert first.promql_tests[0].eval_time_ms == 5_400_000
    assert first.promql_tests[0].exp_samples[0].value == 1000.0
    assert first.max_eval_time_ms == 5_400_000
    # An omitted interval is 0 in promtool 2.42 (2.49 defaults it to evaluation_interval);
    # no eval times means only step 0.
    assert second.interval_ms == 0
    assert second.max_eval_time_ms == 0
    assert not second.uses_stale


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("tests:\n  - nme: x\n", "t.yaml:2: tests[0].nme: field nme not found in testGroup"),
        ("evaluation_interval: 1.5m\n", "t.yaml:1: evaluation_interval: not a valid duration"),
        (
            "tests:\n  - input_series:\n      - series: m\n        values: 1 two\n",
            "t.yaml:3: tests[0].input_series[0]: unexpected 'two'",
        ),
        (
            "tests:\n  - alert_rule_test:\n      - eval_time: 1m\n",
            "t.yaml:3: tests[0].alert_rule_test[0].alertname: field is required",
        ),
        (
            (
                "tests:\n  - promql_expr_test:\n      - expr: up\n        exp_samples:\n"
                "          - value: abc\n"
            ),
            "t.yaml:5: tests[0].promql_expr_test[0].exp_samples[0].value: value must be a number",
        ),
        ("group_eval_order: [a, a]\n", "group name repeated in evaluation order: a"),
        ("tests: [\n", "t.yaml:2: invalid YAML"),
    ],
)
def test_findings_name_file_line_and_field(text: str, finding: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_test_file(text, "t.yaml")

    assert finding in str(info.value)


def test_an_omitted_interval_loads_each_series_as_its_first_value_at_zero() -> None:
    text = (
        "tests:\n  - input_series:\n      - series: m\n        values: _ 5 7 stale\n"
        "      - series: n\n        values: stale 1\n"
    )

    (group,) = parse_test_file(text, "t.yaml").tests

    m, n = group.input_series
    assert m.loaded(group.interval_ms) == [(0, 5.0)]
    assert n.loaded(0) == [(0, STALE)]
    assert m.loaded(60_000) == [(60_000, 5.0), (120_000, 7.0), (180_000, STALE)]
    assert group.uses_stale  # n's first value is a staleness marker


def test_a_series_defined_twice_keeps_its_last_definition() -> None:
    text = (
        "tests:\n  - interval: 1m\n    input_series:\n"
        '      - series: m{a="1"}\n        values: 1 1\n'
        "      - series: other\n        values: 3\n"
        '      - series: m{a="1"}\n        values: 2 2 2\n'
    )

    (group,) = parse_test_file(text, "t.yaml").tests

    assert [(dict(s.labels), s.points) for s in group.input_series] == [
        ({"__name__": "other"}, (3.0,)),
        ({"__name__": "m", "a": "1"}, (2.0, 2.0, 2.0)),
    ]


def test_expected_samples_default_to_the_empty_label_set_and_zero() -> None:
    text = (
        "tests:\n  - promql_expr_test:\n      - expr: vector(0)\n"
        "        exp_samples:\n          - {}\n          - labels: m\n"
    )

    (group,) = parse_test_file(text, "t.yaml").tests

    samples = group.promql_tests[0].exp_samples
    assert [(s.labels, s.value) for s in samples] == [("", 0.0), ("m", 0.0)]


def test_an_evaluation_interval_of_zero_means_one_minute() -> None:
    assert parse_test_file("evaluation_interval: 0\n", "t.yaml").evaluation_interval_ms == 60_000


MERGED = """\
rule_files: [r.yaml]
tests:
  - &base
    name: first
    interval: 1m
    external_labels: &labels {cluster: c1, region: r1}
    input_series:
      - series: m
        values: 1
  - name: second
    <<: *base
    external_labels:
      <<: *labels
      zone: z1
  - interval: 5m
    <<: *base
    name: third
"""


def test_merge_keys_apply_in_document_order_as_yaml_v2_does() -> None:
    first, second, third = parse_test_file(MERGED, "t.yaml").tests

    assert (first.name, first.interval_ms) == ("first", 60_000)
    # `name` is written before the merge in `second`, so the merged `name` replaces it.
    assert (second.name, second.interval_ms, second.input_series) == (
        "first",
        60_000,
        first.input_series,
    )
    assert second.external_labels == {"cluster": "c1", "region": "r1", "zone": "z1"}
    # Written after the merge, these win.
    assert (third.name, third.interval_ms) == ("third", 60_000)


def test_a_merge_that_sets_a_map_key_twice_is_refused_as_yaml_v2_strict_does() -> None:
    text = MERGED.replace("zone: z1", "cluster: c2")

    with pytest.raises(ConfigErrors) as info:
        parse_test_file(text, "t.yaml")

    assert "t.yaml:14: tests[1].external_labels.cluster: key 'cluster' already set in map" in str(
        info.value
    )


def _series(*values: str) -> str:
    rows = "".join(
        f"      - series: 'up{{job=\"{i}\"}}'\n        values: '{v}'\n"
        for i, v in enumerate(values)
    )
    return f"tests:\n  - interval: 1m\n    input_series:\n{rows}"


@pytest.mark.parametrize(
    ("values", "where"),
    [
        (("0+1x100000000",), "t.yaml:4: tests[0].input_series[0]"),
        (("1x999999", "_x2"), "t.yaml:6: tests[0].input_series[1]"),
        (("stalex600000", "0-1x600000"), "t.yaml:6: tests[0].input_series[1]"),
    ],
)
def test_series_expanding_beyond_a_million_samples_are_refused_before_expanding(
    values: tuple[str, ...], where: str
) -> None:
    """``0+1x100000000`` took 3 GB; the count is checked before any point is made."""
    with pytest.raises(ConfigErrors) as info:
        parse_test_file(_series(*values), "t.yaml")
    (error,) = info.value.errors
    assert str(error).startswith(f"{where}: the input series of a test group may have at most")


def test_a_million_samples_per_group_are_accepted() -> None:
    (group,) = parse_test_file(_series("1x499999", "_x250000", "0+1x249999"), "t.yaml").tests
    assert sum(len(s.points) for s in group.input_series) == 1_000_000


def test_an_eval_time_needing_too_many_evaluations_is_refused() -> None:
    text = (
        "evaluation_interval: 1ms\ntests:\n"
        "  - alert_rule_test:\n      - {eval_time: 1h, alertname: A}\n"
    )
    with pytest.raises(ConfigErrors) as info:
        parse_test_file(text, "t.yaml")
    (error,) = info.value.errors
    assert str(error) == (
        "t.yaml:3: tests[0]: an eval_time of 1h at an evaluation_interval of 1ms needs "
        "3600001 evaluations; at most 1000000 are allowed"
    )
