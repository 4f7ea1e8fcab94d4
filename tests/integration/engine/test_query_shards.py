"""Queries in shards (``prometheus.query_shards``) against Prometheus 2.42 itself.

Every alerting rule of the shipped packs, on the input of every promtool test group of
``rules/tests`` (cluster label everywhere, on the exporter's series only, or absent;
shared GPUs, MIG, missing series…), at each time the group checks alerts: the answer
asked in 2 and in 3 shards must be the whole answer, sample for sample, or the same
error. A rule that the split leaves whole is counted, so the test cannot pass by never
splitting. And the boundaries' regular expressions, as Prometheus's RE2 reads them,
must cut label values exactly where Python's string order does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.adapters.prometheus import (
    PrometheusAccess,
    PrometheusQuerier,
    QueryFailedError,
    QueryRejectedError,
)
from guardian.app.promtest.file_run import load_groups, resolve_rule_files
from guardian.app.promtest.group_prometheus import start_test_prometheus
from guardian.app.rules.build import read_rule_files
from guardian.app.settings.clients import PrometheusSettings
from guardian.engine.promql.shard import below, pivots, query_split_label
from guardian.engine.promtest.model import UnitTestFile, parse_test_file
from guardian.engine.rules.fan_out import in_order
from guardian.engine.rules.sharding import Sharding, sharded_query
from guardian.model.http_client import HttpClientConfig
from guardian.model.query import QueryResult
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
LABELS = tuple(PrometheusSettings.model_fields["shard_labels"].default)


def _splittable(test: UnitTestFile) -> list[str]:
    rule_groups = load_groups(test, resolve_rule_files(test)[0])
    rules = [r.query for g in rule_groups for _, r in g.rules]
    return [q for q in rules if query_split_label(q, LABELS) is not None]


def _test_files() -> list[Path]:
    """The promtool test files whose rules the engine would split."""
    paths = sorted((REPO / "rules" / "tests").glob("*.yaml"))
    return [p for p in paths if _splittable(parse_test_file(p.read_text("utf-8"), str(p)))]


def test_the_dear_rules_are_split() -> None:
    names = {"GpuIdle", "GpuShareIdle", "GpuMemoryUnderutilized", "GpuActivityUnknown"}
    for pack in ("guardian", "dcgm"):
        files = read_rule_files([str(p) for p in sorted((REPO / "rules" / pack).glob("*.yaml"))])
        for rule in (r for f in files for g in f.groups for r in g.alerting_rules):
            if rule.name in names and (pack, rule.name) != ("dcgm", "GpuActivityUnknown"):
                assert query_split_label(rule.expr, LABELS), (pack, rule.name)


def _answer(querier: PrometheusQuerier, expr: str, ts: float, shards: int) -> object:
    def values(label: str, _ts: float) -> list[str]:
        return querier.label_values(label)

    try:
        if shards == 1:
            result: QueryResult = querier.query(expr, ts)
        else:
            sharding = Sharding(shards, LABELS, values)
            result = sharded_query(expr, ts, querier.query, in_order, sharding)
    except (QueryFailedError, QueryRejectedError) as exc:
        return ("error", type(exc).__name__, str(exc))
    return sorted((sorted(s.labels.to_dict().items()), s.value) for s in result.samples)


@pytest.fixture
def workroot() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="shards-") as tmp:
        yield Path(tmp)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("test_file", _test_files(), ids=lambda p: p.stem)
def test_every_rule_in_shards_gives_the_whole_answer(test_file: Path, workroot: Path) -> None:
    test = parse_test_file(test_file.read_text(encoding="utf-8"), str(test_file))
    splittable = _splittable(test)
    binaries = PrometheusBinaries.find()
    compared = split = 0
    for index, group in enumerate(test.tests):
        if group.uses_stale:
            continue
        times = sorted({case.eval_time_ms / 1000 for case in group.alert_tests}) or [0.0]
        workdir = workroot / str(index)
        workdir.mkdir()
        prom = start_test_prometheus(workdir, group, test.evaluation_interval_ms, binaries)
        querier = PrometheusQuerier(
            PrometheusAccess(HttpClientConfig(prom.url, timeout=60), trust_env=False)
        )
        try:
            for expr in splittable:
                label = query_split_label(expr, LABELS)
                assert label is not None
                split += bool(pivots(querier.label_values(label), 2))
                for ts in times:
                    whole = _answer(querier, expr, ts, 1)
                    for shards in (2, 3):
                        assert _answer(querier, expr, ts, shards) == whole, (group.name, ts, expr)
                    compared += 1
        finally:
            querier.close()
            prom.stop()
    assert compared, "no rule was compared"
    assert split, "no rule was split: the input had one value of each label"


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"') + '"'


VALUES = [
    "",
    "a",
    "a\n",
    "a\nb",
    "ab",
    "a-b",
    "a.b",
    "a|b",
    "a(b",
    "a[b]",
    "a\\b",
    "b",
    "GPU-0f",
    "GPU-10",
    "GPU-1",
    "GPU-a",
    "GPU-A",
    "zz",
    "é",
    "éa",
    "日本",
    "日",
    "\x7f",
    "~",
    " ",
    "a b",
]


def test_boundaries_cut_where_python_sorts(prometheus: PrometheusFactory) -> None:
    """Series with awkward values of ``node``; for each value as a pivot, the series
    Prometheus matches with ``below(pivot)`` are exactly those that sort before it."""
    lines = [f"x{{node={_quoted(v)}}} 1 0" for v in VALUES]
    prom = prometheus(openmetrics="# TYPE x gauge\n" + "\n".join(lines) + "\n# EOF\n")
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(prom.url, timeout=60), trust_env=False)
    )
    try:
        assert sorted(querier.label_values("node")) == sorted(v for v in VALUES if v)
        for pivot in [*VALUES, "GPU-", "a\x00", "\U0010ffff"]:
            matcher = below(pivot).replace("\\", "\\\\").replace('"', '\\"')
            got = querier.query(f'x{{node=~"{matcher}"}}', 1.0)
            below_pivot = sorted(s.labels.to_dict().get("node", "") for s in got.samples)
            assert below_pivot == sorted(v for v in VALUES if v < pivot), repr(pivot)
            rest = querier.query(f'x{{node!~"{matcher}"}}', 1.0)
            assert len(got.samples) + len(rest.samples) == len(VALUES), repr(pivot)
    finally:
        querier.close()
