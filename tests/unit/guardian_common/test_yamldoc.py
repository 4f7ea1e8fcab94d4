"""The bounded YAML loader: lines kept, hostile documents refused with file and line."""

from __future__ import annotations

import time

import pytest

from guardian_common.errors import ConfigError
from guardian_common.yamldoc import MAX_NODES, node_budget, parse_yaml


def laughs(levels: int) -> str:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        prev, cur = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def error(text: str, **limits: int) -> str:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml", **limits)
    return str(info.value)


def test_data_and_lines() -> None:
    doc = parse_yaml("a:\n  b: [1, x]\nc: &c {d: true}\ne: *c\n", "f.yaml")
    assert doc.data == {"a": {"b": [1, "x"]}, "c": {"d": True}, "e": {"d": True}}
    assert (doc.line(("a", "b", 1)), doc.line(("e",)), doc.line(("e", "d"))) == (2, 4, 3)


def test_billion_laughs_stops_at_the_node_budget_quickly() -> None:
    started = time.process_time()
    message = error(laughs(10))
    assert message.startswith("f.yaml:")
    assert f"more than {MAX_NODES} nodes once aliases are expanded" in message
    assert time.process_time() - started < 1.0  # 10^9 strings otherwise


def test_aliases_within_the_budget_are_expanded() -> None:
    doc = parse_yaml(laughs(4), "f.yaml")  # 10^4 strings
    assert len(doc.data["d"]) == 10
    assert error(laughs(4), max_nodes=5_000).endswith("nodes once aliases are expanded")


def test_the_budget_grows_with_a_long_text() -> None:
    assert node_budget("x" * 100) == MAX_NODES
    assert node_budget("x" * (100 * MAX_NODES)) == 5 * MAX_NODES


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", 1),  # flow
        ("a:\n" + "- " * 3000 + "x\n", 2),  # block, compact
        ("a:\n" + "".join("  " * i + "b:\n" for i in range(1, 200)), 101),
    ],
)
def test_deep_nesting_is_refused_without_recursion(text: str, line: int) -> None:
    message = error(text)
    assert message.startswith(f"f.yaml:{line}: ")
    assert "nest" in message


def test_nesting_through_aliases_is_bounded_too() -> None:
    text = "a: &a [[[[[[[[[[x]]]]]]]]]]\nb: &b [[[[[[[[[*a]]]]]]]]]\nc: [[[[[[[[[*b]]]]]]]]]\n"
    assert parse_yaml(text, "f.yaml").data["c"] is not None
    assert "nested deeper than 20 levels" in error(text, max_depth=20)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &a [1, *a]\n", "f.yaml:1: alias *a is inside its own anchor (a cycle)"),
        ("a: *nope\n", "f.yaml:1: alias *nope has no anchor &nope before it"),
        ("a: 1\n---\nb: 2\n", "f.yaml:2: expected a single document, found another"),
        ("a: b\x1b[31m\n", "f.yaml:1: control character U+001B at column 5 is not allowed in YAML"),
        ("a: [\n", "f.yaml:2: invalid YAML: did not find expected node content"),
        ("a: 1\na: 2\n", "f.yaml:2: a: mapping key 'a' already defined"),
    ],
)
def test_structural_errors_are_one_line_with_the_line(text: str, expected: str) -> None:
    assert error(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: 2024-13-45\n", "a: invalid timestamp '2024-13-45': month must be in 1..12"),
        ("a: " + "9" * 5000 + "\n", "a: invalid int '99999"),
        ("a: !!python/object:os.system x\n", "a: invalid YAML value: could not determine"),
    ],
)
def test_bad_scalars_are_errors_at_their_line(text: str, reason: str) -> None:
    assert error(text).startswith(f"f.yaml:1: {reason}")


def test_an_anchor_may_be_defined_again() -> None:
    # YAML 1.2 and Go's parser: a later alias refers to the latest definition.
    assert parse_yaml("a: &x 1\nb: &x 2\nc: *x\n", "f.yaml").data == {"a": 1, "b": 2, "c": 2}


def test_plain_scalars_keep_their_style_for_readers_of_the_source() -> None:
    node = parse_yaml("a: 0x70\nb: '0x70'\n", "f.yaml").node
    assert node is not None
    styles = [value.style for _, value in node.value]
    assert styles == [None, "'"]
