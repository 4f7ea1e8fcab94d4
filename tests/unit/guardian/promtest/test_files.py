"""Loading a test file's rule files: globs relative to the test file, group order."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardian.app.promtest.file_run import load_groups, resolve_rule_files
from guardian.engine.promtest.model import parse_test_file
from guardian_common.errors import ConfigErrors

RULES = """\
groups:
  - name: {a}
    rules: [{{alert: A, expr: up}}]
  - name: {b}
    rules: [{{record: r, expr: up}}]
"""


def _setup(tmp_path: Path, order: str = "[]") -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "1.yaml").write_text(RULES.format(a="one", b="two"))
    (tmp_path / "rules" / "2.yaml").write_text(RULES.format(a="three", b="four"))
    test = tmp_path / "t.yaml"
    test.write_text(f"rule_files: [rules/*.yaml, missing/*.yaml]\ngroup_eval_order: {order}\n")
    return test


def test_globs_resolve_next_to_the_test_file_and_warn_when_empty(tmp_path: Path) -> None:
    path = _setup(tmp_path)
    test = parse_test_file(path.read_text(), str(path))

    paths, warnings = resolve_rule_files(test)

    assert paths == [str(tmp_path / "rules" / "1.yaml"), str(tmp_path / "rules" / "2.yaml")]
    assert warnings == ["  WARNING: no file match pattern missing/*.yaml"]


def test_groups_listed_in_group_eval_order_run_first_then_file_order(tmp_path: Path) -> None:
    path = _setup(tmp_path, "[four, one]")
    test = parse_test_file(path.read_text(), str(path))

    groups = load_groups(test, resolve_rule_files(test)[0])

    assert [g.name for g in groups] == ["four", "one", "two", "three"]


def test_an_unknown_group_in_group_eval_order_is_an_error(tmp_path: Path) -> None:
    path = _setup(tmp_path, "[five]")
    test = parse_test_file(path.read_text(), str(path))

    with pytest.raises(ConfigErrors, match="group five in group_eval_order"):
        load_groups(test, resolve_rule_files(test)[0])


def test_rule_file_errors_name_the_rule_file(tmp_path: Path) -> None:
    path = _setup(tmp_path)
    bad = "groups:\n  - name: g\n    rules:\n      - alert: A\n"
    (tmp_path / "rules" / "2.yaml").write_text(bad)
    test = parse_test_file(path.read_text(), str(path))

    with pytest.raises(ConfigErrors, match=r"2.yaml:4: groups\[0\].rules\[0\].expr"):
        load_groups(test, resolve_rule_files(test)[0])
