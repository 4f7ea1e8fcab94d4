"""Range queries give the engine exactly what instant queries give it.

``guardian simulate`` evaluates each rule with one range query per chunk and feeds each
step's vector to the engine's state machine. Here both paths run against the same real
Prometheus and their alert timelines (every transition, with its labels, annotations,
value and times) must be identical: on every test group of the shipped pack's promtool
tests, at the groups' real evaluation slots, and on expressions where the two kinds of
query could differ (offset, @, timestamp(), subqueries, @ start()).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.history.fetch import RangeFetcher
from guardian.app.promtest.file_run import load_groups, resolve_rule_files
from guardian.app.promtest.group_prometheus import start_test_prometheus
from guardian.app.simulate.alert_timeline import TimelineBuilder, TimelineRequest, group_slots
from guardian.engine.promtest.model import parse_test_file
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup, GroupEvalOptions, evaluate_group
from guardian.engine.rules.loader import parse_rule_file
from guardian.model.alerts import AlertTransition
from guardian.model.history import TimeRange
from guardian.model.http_client import HttpClientConfig

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
PACK_TESTS = sorted((REPO / "rules" / "tests").glob("*.yaml"))


def instant_timeline(
    groups: Sequence[CompiledGroup], querier: PrometheusQuerier, end: float, env: TemplateEnv
) -> dict[str, list[AlertTransition]]:
    """What the live engine does: evaluate_group at every slot, one instant query per rule."""
    out: dict[str, list[AlertTransition]] = {}
    for group in groups:
        state: dict = {}
        found = out.setdefault(group.name, [])
        for ts_ms in group_slots(group, 0.0, end):
            state, evaluation = evaluate_group(
                group, state, ts_ms / 1000, querier.query, GroupEvalOptions(env=env)
            )
            found.extend(evaluation.transitions)
    return out


def range_timeline(
    groups: Sequence[CompiledGroup],
    querier: PrometheusQuerier,
    end: float,
    env: TemplateEnv,
    chunk: float,
) -> dict[str, list[AlertTransition]]:
    request = TimelineRequest(groups, TimeRange(0.0, end, 60.0), env, chunk_seconds=chunk)
    timeline = TimelineBuilder(request, RangeFetcher(querier), querier.query).build()
    out: dict[str, list[AlertTransition]] = {g.name: [] for g in groups}
    for t in timeline.transitions:
        out[t.group].append(t)
    return out


def _by_instant(
    timeline: dict[str, list[AlertTransition]],
) -> dict[str, list[AlertTransition]]:
    """Each group's transitions in time order and, within one evaluation, by alert: an
    instant query and a range query list a vector's series in different orders, and
    the transitions of one evaluation follow that order (Prometheus's too)."""
    return {
        group: sorted(found, key=lambda t: (t.at, t.rule, t.labels.items_sorted))
        for group, found in timeline.items()
    }


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", PACK_TESTS, ids=lambda p: p.name)
def test_shipped_pack_tests_give_identical_timelines(
    path: Path, tmp_path: Path, prometheus_binaries: PrometheusBinaries
) -> None:
    test = parse_test_file(path.read_text(encoding="utf-8"), str(path))
    rule_paths, _ = resolve_rule_files(test)
    groups = load_groups(test, rule_paths)
    compared = 0
    for n, case in enumerate(test.tests):
        if case.uses_stale:
            continue  # backfill cannot write staleness markers (the harness skips them too)
        points = max((len(s.points) for s in case.input_series), default=0)
        end = max(case.max_eval_time_ms, points * case.interval_ms) / 1000
        prom = start_test_prometheus(
            tmp_path / f"g{n}", case, test.evaluation_interval_ms, prometheus_binaries
        )
        try:
            querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=60)))
            env = TemplateEnv(case.external_labels, case.external_url)
            live = instant_timeline(groups, querier, end, env)
            # Chunks of 17 minutes: boundaries fall between slots anywhere in the range.
            replayed = range_timeline(groups, querier, end, env, chunk=17 * 60.0)
            querier.close()
        finally:
            prom.stop()
        assert _by_instant(replayed) == _by_instant(live), (
            f"{case.name}: range and instant timelines differ"
        )
        compared += sum(len(v) for v in live.values())
    assert compared > 0, "no test group produced a transition: nothing was compared"


T0 = 1_700_000_000.0

TRICKY_RULES = """\
groups:
  - name: tricky
    interval: 1m
    rules:
      - alert: Offset
        expr: x - x offset 7m > 2
        for: 3m
        annotations: {description: "{{ $labels.instance }} grew by {{ $value }}"}
      - alert: AtFixed
        expr: x > x @ %(at)d
        keep_firing_for: 4m
        labels: {value_bucket: '{{ if gt $value 10.0 }}high{{ else }}low{{ end }}'}
      - alert: SampleAge
        expr: time() - timestamp(x) > 100
      - alert: Subquery
        expr: max_over_time(rate(c[3m])[10m:2m]) > 0.05
        for: 2m
      - alert: RangeEnds
        # Always true in an instant query; in a range query only at the range's start.
        expr: x == x @ start()
        annotations: {summary: "{{ $value }}"}
      - alert: QueryTemplate
        expr: x > 15
        annotations: {peer: "{{ with query \\"count(x)\\" }}{{ . | first | value }}{{ end }}"}
"""


def _tricky_samples() -> list[Sample]:
    samples = []
    for minute in range(0, 180):
        ts = T0 + minute * 60
        for instance, slope in (("a", 0.2), ("b", 0.05)):
            # x rises, pauses (a gap of 9 minutes for b), then rises again.
            if instance == "b" and 60 <= minute < 69:
                continue
            value = slope * minute if minute < 90 else slope * 90 + (minute - 90) * slope * 2
            samples.append(Sample("x", {"instance": instance}, ts, round(value, 3)))
            counter = minute * (10.0 if minute % 40 < 20 else 0.1)
            samples.append(Sample("c", {"instance": instance}, ts, counter))
    return samples


@pytest.mark.timeout(300)
def test_tricky_expressions_give_identical_timelines(tmp_path: Path, prometheus) -> None:
    rules = tmp_path / "tricky.yaml"
    rules.write_text(TRICKY_RULES % {"at": int(T0 + 30 * 60)}, encoding="utf-8")
    (group,) = parse_rule_file(rules.read_text(encoding="utf-8"), str(rules)).groups
    groups = [CompiledGroup.compile(group, 60.0)]
    prom = prometheus(openmetrics=render_openmetrics(_tricky_samples()))
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=60)))
    env = TemplateEnv({"cluster": "c1"})
    start, end = T0, T0 + 179 * 60

    live: list[AlertTransition] = []
    state: dict = {}
    for ts_ms in group_slots(groups[0], start, end):
        state, evaluation = evaluate_group(
            groups[0], state, ts_ms / 1000, querier.query, GroupEvalOptions(env=env)
        )
        live.extend(evaluation.transitions)
    request = TimelineRequest(groups, TimeRange(start, end, 60.0), env, chunk_seconds=2400.0)
    builder = TimelineBuilder(request, RangeFetcher(querier), querier.query)
    timeline = builder.build()
    querier.close()

    replayed = list(timeline.transitions)
    fired = {t.rule for t in live if t.kind.value == "firing"}
    assert {"Offset", "AtFixed", "SampleAge", "Subquery", "RangeEnds", "QueryTemplate"} <= fired
    assert timeline.instant_rules == ("tricky/RangeEnds",)
    assert replayed == live
