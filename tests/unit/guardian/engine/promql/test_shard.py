"""Which expressions split on which label, the shard queries, and the boundaries.
(Against Prometheus itself: tests/integration/engine/test_query_shards.py.)"""

from __future__ import annotations

import random
import re

import pytest

from guardian.engine.promql import parse_expr
from guardian.engine.promql.shard import below, pivots, query_split_label, shard_queries

PREFERRED = ("uuid", "node")


@pytest.mark.parametrize(
    ("expr", "label"),
    [
        ("sum by (uuid) (x)", "uuid"),
        ("sum by (node, uuid) (x) > 1", "uuid"),
        ("sum by (node) (x)", "node"),
        ("x * on (uuid) group_left (model) y", "uuid"),
        ("sum by (uuid, pod) (x) and on (node, uuid) y", "uuid"),
        ("x and on (cluster, node) sum by (node) (y)", "node"),
        ("sum by (uuid) (x) - sum by (uuid) (x offset 1h)", "uuid"),
        ("max_over_time(sum by (uuid) (rate(x[5m]))[30m:1m])", "uuid"),
        ("time() - max by (uuid) (max_over_time(x[30m])) < 1800", "uuid"),
        ("topk by (uuid) (1, x)", "uuid"),
        ('count_values by (uuid) ("v", x)', "uuid"),
        ("histogram_quantile(0.9, sum by (le, uuid) (rate(x[5m])))", "uuid"),
        ('label_replace(sum by (uuid) (x), "reason", "r", "", "")', "uuid"),
        ("clamp_min(sum by (uuid) (x), 0) or sum by (uuid) (y)", "uuid"),
        ("-sum by (uuid) (x) * 2", "uuid"),
        ("sum by (uuid) (x) * ignoring (pod) sum by (uuid) (y)", "uuid"),
        ("sum without (pod) (sum by (uuid, pod) (x))", "uuid"),
    ],
)
def test_splits_where_every_step_keeps_the_label(expr: str, label: str) -> None:
    assert query_split_label(expr, PREFERRED) == label


@pytest.mark.parametrize(
    "expr",
    [
        "x > 0",  # a filter: nothing groups, cheap to ask whole
        "sum(x)",
        "sum by (pod) (x)",
        "topk(1, x)",
        "sum without (uuid, node) (sum by (uuid, node) (x))",
        "sum by (uuid) (x) and on () y",
        "sum by (uuid) (x) * on (pod) group_left () sum by (pod) (y)",
        "sum by (uuid) (x) * ignoring (uuid) sum by (uuid) (y)",
        "sum by (uuid, pod) (x) * ignoring (pod) group_left (uuid) sum by (uuid) (y)",
        'label_replace(sum by (uuid) (x), "uuid", "$1", "node", "(.*)")',
        'label_join(sum by (uuid) (x), "uuid", "-", "node")',
        'count_values by (uuid) ("uuid", x)',
        "absent(sum by (uuid) (x))",
        "absent_over_time(x[5m]) * on (uuid) sum by (uuid) (x)",
        "sum by (uuid) (x) > scalar(sum by (uuid) (y))",
        "sort(sum by (uuid) (x))",
        "sum by (uuid) (x) or vector(1)",
        "sum by (uuid) (x) > bool day_of_month()",
        "1 + 2",
        "sum by (uuid) (x) +",  # does not parse
    ],
)
def test_does_not_split_what_crosses_values(expr: str) -> None:
    assert query_split_label(expr, PREFERRED) is None


def test_histogram_quantile_cannot_split_on_le() -> None:
    assert query_split_label("histogram_quantile(0.9, sum by (le) (rate(x[5m])))", ("le",)) is None


def test_shard_queries_add_the_boundaries_to_every_selector() -> None:
    text = "sum by (uuid) (rate(x[5m])) * on (uuid) group_left () (y offset 30m)"
    queries = shard_queries(text, "uuid", ("GPU-4", "GPU-a"))
    assert len(queries) == 3
    first, second, last = (re.findall(r'uuid(=~|!~)"', q) for q in queries)
    assert first == ["=~", "=~"]  # x and y: below the first boundary
    assert sorted(second) == ["!~", "!~", "=~", "=~"]  # not below the first, below the next
    assert last == ["!~", "!~", "!~", "!~"]  # below neither
    for query in queries:
        parse_expr(query)  # each is valid PromQL
        assert "[5m]" in query
        assert "offset 30m" in query


def test_pivots_cut_sorted_values_evenly_at_short_prefixes() -> None:
    rnd = random.Random(7)  # noqa: S311 (test data)
    values = [f"GPU-{rnd.getrandbits(128):032x}" for _ in range(1000)]
    cuts = pivots(values, 4)
    assert len(cuts) == 3
    assert cuts == sorted(cuts)
    assert all(len(c) <= 8 for c in cuts)
    sizes = [
        sum(1 for v in values if (i == 0 or v >= cuts[i - 1]) and (i == 3 or v < cuts[i]))
        for i in range(4)
    ]
    assert sizes == [250, 250, 250, 250]


@pytest.mark.parametrize(
    ("values", "shards", "expected"),
    [
        ([], 2, []),
        (["a"], 2, []),
        (["a", "a", "a"], 4, []),
        (["a", "b"], 4, ["b"]),
        (["", "a"], 2, ["a"]),
        (["ab", "abc"], 2, ["abc"]),
    ],
)
def test_pivots_of_few_values(values: list[str], shards: int, expected: list[str]) -> None:
    assert pivots(values, shards) == expected


def _python(pattern: str) -> re.Pattern[str]:
    """RE2's ``\\x{…}`` in Python's syntax (matched whole, as Prometheus anchors it)."""
    return re.compile(re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m[1], 16):08x}", pattern))


@pytest.mark.parametrize("pivot", ["", "a", "GPU-8a", "n\n1", "é日", "a b-c:d/e_f", "\x00x"])
def test_below_matches_exactly_what_sorts_before_the_pivot(pivot: str) -> None:
    regex = _python(below(pivot))
    rnd = random.Random(pivot)  # noqa: S311 (test data)
    alphabet = [*set(pivot), "\x00", "\n", "a", "z", "é", "\U0010ffff"]
    samples = ["", pivot, pivot + "\x00", pivot[:-1], pivot + "z"]
    samples += ["".join(rnd.choices(alphabet, k=rnd.randint(0, 8))) for _ in range(3000)]
    wrong = [s for s in samples if bool(regex.fullmatch(s)) != (s < pivot)]
    assert wrong == []
