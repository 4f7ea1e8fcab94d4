"""The rule loader: Prometheus's rulefmt checks, each error with file, line and field."""

from __future__ import annotations

import textwrap

import pytest

from guardian.engine.rules.loader import parse_rule_file
from guardian.model.rules import AlertingRule, RecordingRule
from guardian_common.errors import ConfigErrors

GOOD = """\
groups:
  - name: gpu
    interval: 30s
    limit: 10
    rules:
      - record: gpu:util:avg5m
        expr: avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m])
      - alert: GpuIdle
        expr: gpu:util:avg5m < 5
        for: 1h30m
        keep_firing_for: 5m
        labels:
          severity: warning
          team: "{{ $labels.namespace }}"
        annotations:
          summary: GPU is idle.
          description: "{{ $labels.pod }} at {{ $value }}%"
  - name: other
    rules:
      - alert: Always
        expr: vector(1)
"""


def test_good_file_loads_every_field() -> None:
    rule_file = parse_rule_file(GOOD, "r.yaml")

    gpu, other = rule_file.groups
    assert (gpu.name, gpu.interval_seconds, gpu.limit, gpu.file) == ("gpu", 30.0, 10, "r.yaml")
    assert gpu.key == "r.yaml;gpu"
    record, alert = gpu.rules
    assert isinstance(record, RecordingRule)
    assert record.name == "gpu:util:avg5m"
    assert isinstance(alert, AlertingRule)
    assert alert.for_seconds == 5400.0
    assert alert.keep_firing_for_seconds == 300.0
    assert dict(alert.labels) == {"severity": "warning", "team": "{{ $labels.namespace }}"}
    assert alert.annotations["summary"] == "GPU is idle."
    assert alert.line == 8
    assert other.interval_seconds is None
    assert other.rules[0].name == "Always"


def _errors(text: str) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(ConfigErrors) as info:
        parse_rule_file(textwrap.dedent(text), "rules/x.yaml")
    for error in info.value.errors:
        assert error.path == "rules/x.yaml"
        assert str(error).startswith(f"rules/x.yaml:{error.line}: ")
    return [(e.line, e.field, e.reason) for e in info.value.errors]


@pytest.mark.parametrize(
    ("text", "line", "field", "reason"),
    [
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    fore: 5m
            """,
            6,
            "groups[0].rules[0].fore",
            "field fore not found in rule",
        ),
        (
            """\
            groups:
              - name: g
                query_offset: 1m
                rules: []
            """,
            3,
            "groups[0].query_offset",
            "field query_offset not found in rule group (needs Prometheus 2.53",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    for: 1.5h
            """,
            6,
            "groups[0].rules[0].for",
            "not a valid duration string: '1.5h'",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    keep_firing_for: 90
            """,
            6,
            "groups[0].rules[0].keep_firing_for",
            "not a valid duration string: 90",
        ),
        (
            """\
            groups:
              - name: g
                interval: 1m30
                rules: []
            """,
            3,
            "groups[0].interval",
            "not a valid duration string",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    labels:
                      bad-name: x
            """,
            7,
            "groups[0].rules[0].labels.bad-name",
            "invalid label name: 'bad-name'",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    labels:
                      __name__: x
            """,
            7,
            "groups[0].rules[0].labels.__name__",
            "invalid label name: __name__ is reserved",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    annotations:
                      1summary: x
            """,
            7,
            "groups[0].rules[0].annotations.1summary",
            "invalid annotation name: '1summary'",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    annotations:
                      summary: "{{ $labels.pod "
            """,
            7,
            "groups[0].rules[0].annotations.summary",
            "template parse error",
        ),
        (
            """\
            groups:
              - name: g
                rules: []
              - name: g
                rules: []
            """,
            4,
            "groups[1].name",
            "groupname: 'g' is repeated in the same file (first at line 2)",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - record: r:x
                    expr: up
                    for: 5m
            """,
            6,
            "groups[0].rules[0].for",
            "invalid field 'for' in recording rule",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - record: r:x
                    expr: up
                    keep_firing_for: 5m
            """,
            6,
            "groups[0].rules[0].keep_firing_for",
            "invalid field 'keep_firing_for' in recording rule",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - record: r:x
                    expr: up
                    annotations:
                      a: b
            """,
            6,
            "groups[0].rules[0].annotations",
            "invalid field 'annotations' in recording rule",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - record: not-a-metric
                    expr: up
            """,
            4,
            "groups[0].rules[0].record",
            "invalid recording rule name: 'not-a-metric'",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    record: b
                    expr: up
            """,
            4,
            "groups[0].rules[0]",
            "only one of 'record' and 'alert' must be set",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - expr: up
            """,
            4,
            "groups[0].rules[0]",
            "one of 'record' or 'alert' must be set",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
            """,
            4,
            "groups[0].rules[0].expr",
            "field is required",
        ),
        (
            """\
            groups:
              - name: ""
                rules: []
            """,
            2,
            "groups[0].name",
            "must not be empty",
        ),
        (
            """\
            groups:
              - name: g
                limit: -1
                rules: []
            """,
            3,
            "groups[0].limit",
            "limit must be a non-negative integer",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: up
                    expr: down
            """,
            6,
            "groups[0].rules[0].expr",
            "mapping key 'expr' already defined",
        ),
        (
            """\
            groups:
              - name: g
                rules:
                  - alert: A
                    expr: "up
            """,
            6,
            None,
            "invalid YAML",
        ),
        (
            """\
            groupz: []
            """,
            1,
            "groupz",
            "field groupz not found in rule file",
        ),
    ],
)
def test_invalid_file_names_line_and_field(
    text: str, line: int, field: str | None, reason: str
) -> None:
    errors = _errors(text)

    assert len(errors) == 1, errors
    got_line, got_field, got_reason = errors[0]
    assert (got_line, got_field) == (line, field)
    assert got_reason.startswith(reason), got_reason


def test_every_error_in_a_file_is_reported() -> None:
    errors = _errors(
        """\
        groups:
          - name: g
            rules:
              - alert: A
                expr: up
                for: soon
              - alert: B
                expr: up
                labels:
                  bad-label: x
        """
    )

    assert [(line, field) for line, field, _ in errors] == [
        (6, "groups[0].rules[0].for"),
        (10, "groups[0].rules[1].labels.bad-label"),
    ]


def test_empty_file_has_no_groups() -> None:
    assert parse_rule_file("", "empty.yaml").groups == ()


def test_zero_durations_and_null_fields_are_accepted() -> None:
    rule_file = parse_rule_file(
        "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: 1\n    for: 0\n    labels:\n",
        "z.yaml",
    )
    rule = rule_file.groups[0].rules[0]
    assert isinstance(rule, AlertingRule)
    assert (rule.expr, rule.for_seconds, dict(rule.labels)) == ("1", 0.0, {})


MERGED = """\
groups:
  - name: g
    rules:
      - &idle
        alert: Idle
        expr: m < 1
        for: 5m
        labels: &labels {severity: warning, team: ml}
        annotations: {summary: idle}
      - <<: *idle
        alert: IdleLong
        for: 1h
        labels:
          severity: page
          <<: *labels
"""


def test_merge_keys_are_honoured_keys_written_win_as_in_yaml_v3() -> None:
    (group,) = parse_rule_file(MERGED, "r.yaml").groups

    idle, long = group.rules
    assert isinstance(long, AlertingRule)
    assert (long.name, long.expr, long.for_seconds) == ("IdleLong", "m < 1", 3600.0)
    # Written before the merge, `severity: page` still wins (Prometheus reads rule files
    # with yaml.v3, where keys written in the mapping override merged ones).
    assert dict(long.labels) == {"severity": "page", "team": "ml"}
    assert dict(long.annotations) == dict(idle.annotations)


@pytest.mark.parametrize(
    ("expr", "finding"),
    [
        ("rate(m)", 'expected type range vector in call to function "rate", got instant vector'),
        ("sum(m) by (a", "unclosed left parenthesis"),
        ('m{job=~"("}', "error parsing regexp: missing closing )"),
        ("nosuch(m)", 'unknown function with name "nosuch"'),
    ],
)
def test_invalid_promql_is_refused_with_file_line_and_field(expr: str, finding: str) -> None:
    text = f"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: '{expr}'\n"

    with pytest.raises(ConfigErrors) as info:
        parse_rule_file(text, "r.yaml")

    message = str(info.value)
    assert message.startswith("r.yaml:5: groups[0].rules[0].expr: could not parse expression: ")
    assert finding in message
