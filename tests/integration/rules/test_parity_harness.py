"""``guardian rules test``: the shipped tests pass through our engine as under promtool.

Every file in ``rules/tests/`` and ``rules/parity/`` must pass ``guardian rules test``
(``test_promtool.py`` checks the same files with promtool 2.42). The behaviour cases
below run each of their files through both tools and require the same verdict, so the
harness is checked against the reference, not only against itself.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guardian.adapters.local_prometheus import PrometheusBinaries

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
SHIPPED = sorted((REPO / "rules" / "tests").glob("*.yaml")) + sorted(
    (REPO / "rules" / "parity").glob("*.yaml")
)


def _guardian_test(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardian", "rules", "test", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=280,
    )


def _promtool_test(*files: Path) -> subprocess.CompletedProcess[str]:
    promtool = PrometheusBinaries.find().promtool
    return subprocess.run(
        [promtool, "test", "rules", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_shipped_test_files_are_found() -> None:
    assert len(SHIPPED) >= 15


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_tests_pass_through_the_engine(path: Path) -> None:
    result = _guardian_test(path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    assert " 0 failed, 0 unsupported" in result.stdout


def _write(tmp_path: Path, rules: str, tests: str) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.yaml").write_text(textwrap.dedent(rules), encoding="utf-8")
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent(tests), encoding="utf-8")
    return path


def _both(path: Path) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    ours, theirs = _guardian_test(path), _promtool_test(path)
    assert (ours.returncode == 0) == (theirs.returncode == 0), (
        f"guardian:\n{ours.stdout}{ours.stderr}\npromtool:\n{theirs.stdout}{theirs.stderr}"
    )
    return ours, theirs


RULES = """\
groups:
  - name: alerts
    rules:
      - alert: High
        expr: job:m:sum > 1
        labels: {severity: warning}
        annotations:
          summary: "{{ $labels.job }} at {{ $value }} in {{ $externalLabels.cluster }}"
          url: "{{ $externalURL }}/x"
  - name: records
    rules:
      - record: job:m:sum
        expr: sum by (job) (m)
"""

TESTS = """\
rule_files: [rules/*.yaml]
evaluation_interval: 1m
group_eval_order: [records, alerts]
tests:
  - name: recorded at the same step is seen by the alert
    interval: 1m
    external_labels: {cluster: c1}
    external_url: https://prom.example
    input_series:
      - series: m{job="j", i="1"}
        values: 1+1x5
      - series: m{job="j", i="2"}
        values: 1x5
    alert_rule_test:
      - eval_time: 0m
        alertname: High
        exp_alerts:
          - exp_labels: {severity: warning, job: j}
            exp_annotations: {summary: "j at EXPECTED in c1", url: "https://prom.example/x"}
    promql_expr_test:
      - expr: job:m:sum
        eval_time: 2m
        exp_samples:
          - labels: 'job:m:sum{job="j"}'
            value: 4
      - expr: ALERTS_FOR_STATE
        eval_time: 3m
        exp_samples:
          - labels: 'ALERTS_FOR_STATE{alertname="High", severity="warning", job="j"}'
            value: 0
      - expr: time()
        eval_time: 4m
        exp_samples:
          - labels: '{}'
            value: 240
"""


def test_recording_rules_group_order_templates_and_engine_alerts(tmp_path: Path) -> None:
    path = _write(tmp_path, RULES, TESTS.replace("EXPECTED", "2"))

    ours, _ = _both(path)

    assert "SUCCESS" in ours.stdout
    assert "1 passed, 0 failed, 0 unsupported" in ours.stdout


def test_a_wrong_expectation_fails_like_promtool(tmp_path: Path) -> None:
    path = _write(tmp_path, RULES, TESTS.replace("EXPECTED", "3"))

    ours, theirs = _both(path)

    assert ours.returncode == 1
    assert "FAILED:" in ours.stderr
    assert "    name: recorded at the same step is seen by the alert," in ours.stderr
    assert "    alertname: High, time: 0s, " in ours.stderr
    assert 'Annotations:{summary="j at 2 in c1", url="https://prom.example/x"}' in ours.stderr
    assert "0 passed, 1 failed, 0 unsupported" in ours.stdout
    # The same lines as promtool's, where both name the same thing.
    assert 'Annotations:{summary="j at 2 in c1", url="https://prom.example/x"}' in theirs.stderr


def test_group_eval_order_matters_as_in_promtool(tmp_path: Path) -> None:
    # Alerts first: at 0m the recorded series does not exist yet, so nothing fires.
    path = _write(tmp_path, RULES, TESTS.replace("[records, alerts]", "[alerts, records]"))

    ours, _ = _both(path)

    assert ours.returncode == 1
    assert "alertname: High, time: 0s" in ours.stderr


def test_stale_is_reported_unsupported_never_passed(tmp_path: Path) -> None:
    tests = """\
    rule_files: [rules/r.yaml]
    tests:
      - name: uses stale
        interval: 1m
        input_series:
          - series: m{job="j"}
            values: 5 stale
        alert_rule_test:
          - eval_time: 1m
            alertname: High
            exp_alerts: []
    """
    path = _write(tmp_path, RULES, tests)

    result = _guardian_test(path)

    assert result.returncode == 1
    assert "UNSUPPORTED: uses stale" in result.stderr
    assert "staleness markers" in result.stderr
    assert "0 passed, 0 failed, 1 unsupported" in result.stdout
    assert "SUCCESS" not in result.stdout


def test_a_rule_evaluation_error_ends_the_test_group(tmp_path: Path) -> None:
    rules = """\
    groups:
      - name: g
        rules:
          - alert: Broken
            expr: m * on () m
    """
    tests = """\
    rule_files: [rules/r.yaml]
    tests:
      - interval: 1m
        input_series:
          - series: m{i="1"}
            values: 1x3
          - series: m{i="2"}
            values: 1x3
        alert_rule_test:
          - eval_time: 2m
            alertname: Broken
            exp_alerts: []
    """
    path = _write(tmp_path, rules, tests)

    ours, theirs = _both(path)

    assert "    rule: Broken, time: 0s, err: " in ours.stderr
    assert "many-to-many matching not allowed" in ours.stderr
    assert "    rule: Broken, time: 0s, err: " in theirs.stderr


def test_bad_files_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, RULES, "rule_files: [rules/r.yaml]\ntests:\n  - intervl: 1m\n")
    missing = tmp_path / "nope.yaml"

    result = _guardian_test(path, missing)

    assert result.returncode == 2
    assert f"{path}:3: tests[0].intervl: field intervl not found in testGroup" in result.stderr
    assert f"{missing}: cannot read" in result.stderr


def test_invalid_promql_is_refused_by_both_with_file_line_and_field(tmp_path: Path) -> None:
    rules = """\
    groups:
      - name: g
        rules:
          - alert: Broken
            expr: rate(m) > 0
    """
    tests = """\
    rule_files: [rules/r.yaml]
    tests:
      - interval: 1m
        input_series:
          - series: m
            values: 1x3
    """
    path = _write(tmp_path, rules, tests)

    ours, theirs = _both(path)

    assert ours.returncode != 0
    rule_file = tmp_path / "rules" / "r.yaml"
    assert (
        f"{rule_file}:5: groups[0].rules[0].expr: could not parse expression: 1:6: parse error: "
        'expected type range vector in call to function "rate", got instant vector'
    ) in ours.stderr
    assert "Traceback" not in ours.stderr
    assert 'expected type range vector in call to function "rate"' in theirs.stderr


def test_the_engine_loads_rule_files_with_merge_keys() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "guardian",
            "rules",
            "check",
            str(REPO / "rules" / "parity" / "rules" / "merge-keys.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_a_query_over_promtools_sample_limit_fails_at_the_same_step(tmp_path: Path) -> None:
    # promtool's test engine lets a query hold 10,000 samples: a week of minutes is
    # more. The rule is fetched in range queries; the chunk that fails is asked step
    # by step, so the error names the step promtool names.
    rules = """\
    groups:
      - name: g
        rules:
          - alert: WeekQuiet
            expr: max_over_time(m[1w]) == 0
    """
    tests = """\
    rule_files: [rules/r.yaml]
    evaluation_interval: 1h
    tests:
      - interval: 1m
        input_series:
          - series: m
            values: 0x10100
        alert_rule_test:
          - eval_time: 8d
            alertname: WeekQuiet
            exp_alerts: [{}]
    """
    path = _write(tmp_path, rules, tests)

    ours, theirs = _both(path)

    line = (
        "    rule: WeekQuiet, time: 167h0m0s, err: query processing would load too many "
        "samples into memory in query execution"
    )
    assert line in theirs.stderr
    assert line in ours.stderr
