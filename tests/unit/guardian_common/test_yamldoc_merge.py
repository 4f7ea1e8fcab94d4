"""Merge keys in the position-keeping YAML loader, in both of Go's orders."""

from __future__ import annotations

import pytest

from guardian_common.errors import ConfigError
from guardian_common.yamldoc import parse_yaml

TEXT = """\
a: &a {x: 1, y: 2}
b: &b {y: 3, z: 4}
explicit_first:
  y: 9
  <<: [*a, *b]
merge_first:
  <<: *a
  x: 5
"""


def test_spec_order_keys_written_win_then_earlier_sources() -> None:
    doc = parse_yaml(TEXT, "f.yaml")

    assert doc.data["explicit_first"] == {"y": 9, "x": 1, "z": 4}
    assert doc.data["merge_first"] == {"x": 5, "y": 2}


def test_document_order_what_comes_later_wins() -> None:
    doc = parse_yaml(TEXT, "f.yaml", "document")

    # The merge comes after `y: 9`; of its sources, *a is applied last.
    assert doc.data["explicit_first"] == {"y": 2, "x": 1, "z": 4}
    assert doc.data["merge_first"] == {"x": 5, "y": 2}
    assert doc.merge_conflicts == {("explicit_first", "y"): 2, ("merge_first", "x"): 8}


def test_merged_keys_keep_the_line_where_they_are_written() -> None:
    doc = parse_yaml(TEXT, "f.yaml")

    assert doc.line(("merge_first", "y")) == 1
    assert doc.line(("merge_first", "x")) == 8


def test_merges_nest() -> None:
    doc = parse_yaml("a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b, z: 3}\n", "f.yaml")

    assert doc.data["c"] == {"x": 1, "y": 2, "z": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {<<: 1}\n", "f.yaml:1: a merge key (<<) takes a mapping or a list of mappings"),
        ("a: {<<: [1]}\n", "f.yaml:1: a merge key (<<) takes a mapping or a list of mappings"),
        # The composer refuses the cycle before a merge could follow it.
        ("a: &a {<<: *a}\n", "f.yaml:1: alias *a is inside its own anchor (a cycle)"),
        ("a:\n  x: 1\n  x: 2\n", "f.yaml:3: a.x: mapping key 'x' already defined"),
    ],
)
def test_bad_merges_and_duplicates_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml")

    assert str(info.value) == message


def test_a_quoted_merge_key_is_an_ordinary_key() -> None:
    assert parse_yaml('a: {"<<": 1}\n', "f.yaml").data == {"a": {"<<": 1}}


def test_merges_over_merges_count_against_the_node_budget() -> None:
    # Each level merges the previous one twice: 2**60 keys if nothing bounded it.
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{k}: &m{k} {{<<: [*m{k - 1}, *m{k - 1}], k{k}: 1}}" for k in range(1, 60)]
    with pytest.raises(ConfigError, match="nodes once aliases are expanded"):
        parse_yaml("\n".join(lines) + "\n", "f.yaml")
