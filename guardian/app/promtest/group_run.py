"""Run one test group through the engine against its test Prometheus.

At every ``evaluation_interval`` step from 0 to the group's last ``eval_time`` each rule
group is evaluated in order, rule by rule, with the engine's pure state machine
(``evaluate_alerting_rule``, as ``evaluate_group`` uses it) and its templates, querying
the test Prometheus at ``time=step``. After each rule its output is remote-written at the
step's timestamp, as Prometheus appends it: ``ALERTS``/``ALERTS_FOR_STATE`` of the
engine's pending and firing alerts (``build_alert_series``) with staleness markers for
the ones that ended (``stale_series``), and recording-rule results. Later rules, later
steps and the ``promql_expr_test`` queries therefore see the engine's state.

Two things keep this from costing two HTTP requests per rule per step. A rule that reads
only the input series (``reads_only_inputs``) is asked once, as range queries over all
steps; only the rules that read the engine's output are asked step by step. And the
writes are held back until something is about to read them: a step-by-step query, a
template's ``query``, or the ``promql_expr_test`` queries at the end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from guardian.adapters.prometheus import PrometheusQuerier, QueryFailedError, QueryRejectedError
from guardian.adapters.prometheus_range import RangeQuerier
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.engine.golang.strconv import go_quote
from guardian.engine.promtest.batching import chunk_of, reads_only_inputs
from guardian.engine.promtest.compare import (
    AlertSeen,
    alert_tests_at,
    compare_alerts,
    compare_samples,
    eval_steps,
    go_duration,
    go_time_duration,
)
from guardian.engine.promtest.model import TestGroup
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.engine.rules.alerting import ActiveMap, RuleContext, evaluate_alerting_rule
from guardian.engine.rules.compiled import CompiledAlertingRule, TemplateEnv, query_text
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.templates import QuerySample
from guardian.model.alerts import AlertState, EvaluationHealth
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.rules import RecordingRule
from guardian.model.series import ActiveAlertSample, TimeSeries

RECORD_COLLISION = "vector contains metrics with the same labelset after applying rule labels"
_HTTP_PREFIX = re.compile(r"^HTTP \d{3} \w*: ")


@dataclass
class _RuleState:
    active: ActiveMap = field(default_factory=dict)
    written: list[TimeSeries] = field(default_factory=list)


@dataclass
class TestServer:
    """The clients of a test group's Prometheus."""

    querier: PrometheusQuerier
    writer: RemoteWriteClient
    ranges: RangeQuerier | None = None


_FLUSH_SAMPLES = 50_000  # write held-back output at least this often
RuleKey = tuple[int, int]


@dataclass
class GroupRun:
    """State of one test group's run: per rule, its active alerts and its last output."""

    groups: Sequence[CompiledGroup]
    test: TestGroup
    server: TestServer
    interval_ms: int
    errors: list[str] = field(default_factory=list)
    states: dict[RuleKey, _RuleState] = field(default_factory=dict)
    pending: list[TimeSeries] = field(default_factory=list)
    batchable: dict[RuleKey, bool] = field(default_factory=dict)
    # Per rule, the range query answers held: (chunk start, step -> answer, or None).
    chunks: dict[RuleKey, tuple[int, dict[int, QueryResult] | None]] = field(default_factory=dict)

    @property
    def querier(self) -> PrometheusQuerier:
        return self.server.querier

    def run(self) -> list[str]:
        """Evaluate, check alerts at their steps, then the PromQL tests. Returns failures."""
        env = TemplateEnv(self.test.external_labels, self.test.external_url)
        for step in eval_steps(self.test.max_eval_time_ms, self.interval_ms):
            eval_errors: list[str] = []
            for group_index, group in enumerate(self.groups):
                eval_errors += self._eval_group(group_index, group, step, env)
            if eval_errors:
                # promtool ends the test group at a rule evaluation error.
                return [*self.errors, *eval_errors]
            for case in alert_tests_at(step, self.interval_ms, self.test.alert_tests):
                failure = compare_alerts(self.test.name, case, self._firing(case.alertname))
                if failure is not None:
                    self.errors.append(failure)
        self.flush()
        for promql in self.test.promql_tests:
            try:
                answer = self.querier.query(promql.expr, promql.eval_time_ms / 1000)
            except Exception as exc:
                self.errors.append(
                    f"    expr: {go_quote(promql.expr)}, "
                    f"time: {go_duration(promql.eval_time_ms)}, err: {exc}"
                )
                continue
            got = [(s.labels, s.value) for s in answer.samples]
            failure = compare_samples(self.test.name, promql, got)
            if failure is not None:
                self.errors.append(failure)
        return self.errors

    def _eval_group(
        self, group_index: int, group: CompiledGroup, step_ms: int, env: TemplateEnv
    ) -> list[str]:
        # CompiledGroup holds the alerting rules in file order; recording rules sit
        # between them in group.group.rules and run in their place.
        alerting = iter(compiled for _key, compiled in group.rules)
        errors: list[str] = []
        for rule_index, rule in enumerate(group.group.rules):
            key = (group_index, rule_index)
            state = self.states.setdefault(key, _RuleState())
            if isinstance(rule, RecordingRule):
                error = self._record(key, rule, state, step_ms)
            else:
                error = self._alert(key, next(alerting), group, state, step_ms, env)
            if error is not None:
                # promtool prints the step as a Go time.Duration, the error as the engine's.
                error = _HTTP_PREFIX.sub("", error)
                errors.append(
                    f"    rule: {rule.name}, time: {go_time_duration(step_ms)}, err: {error}"
                )
        return errors

    # -- queries and writes
    def _written_names(self) -> set[str]:
        return {r.name for g in self.groups for r in g.group.rules if isinstance(r, RecordingRule)}

    def _batched(self, key: RuleKey, expr: str, step_ms: int) -> QueryResult | None:
        """The answer at ``step_ms`` from a range query, or None to ask at this step."""
        ranges = self.server.ranges
        if ranges is None:
            return None
        if key not in self.batchable:
            self.batchable[key] = reads_only_inputs(expr, self._written_names())
        if not self.batchable[key]:
            return None
        start, end = chunk_of(step_ms, self.interval_ms, self.test.max_eval_time_ms)
        held = self.chunks.get(key)
        if held is None or held[0] != start:
            answers: dict[int, QueryResult] | None
            try:
                answers = ranges.query_range(expr, start, end, self.interval_ms)
            except (QueryFailedError, QueryRejectedError):
                answers = None  # ask step by step: a failing step reports its own error
            held = (start, answers)
            self.chunks[key] = held
        return None if held[1] is None else held[1].get(step_ms, QueryResult(()))

    def _query(self, key: RuleKey, expr: str, step_ms: int) -> QueryResult:
        answer = self._batched(key, expr, step_ms)
        if answer is not None:
            return answer
        self.flush()
        return self.querier.query(expr, step_ms / 1000)

    def flush(self) -> None:
        """Write the output held back so far."""
        if self.pending:
            pending, self.pending = self.pending, []
            self.server.writer.write(pending)

    def _alert(
        self,
        key: RuleKey,
        compiled: CompiledAlertingRule,
        group: CompiledGroup,
        state: _RuleState,
        step_ms: int,
        env: TemplateEnv,
    ) -> str | None:
        ts = step_ms / 1000
        answer: QueryResult | BaseException
        try:
            answer = self._query(key, compiled.query, step_ms)
        except Exception as exc:
            answer = exc

        def template_query(expr: str) -> list[QuerySample]:
            self.flush()
            result = self.querier.query(expr, ts)
            return [QuerySample(s.labels.to_dict(), s.value) for s in result.samples]

        context = RuleContext(group.name, group.group.limit, env, template_query)
        step = evaluate_alerting_rule(compiled, state.active, answer, ts, context)
        state.active = step.active
        if step.outcome.health is not EvaluationHealth.OK:
            return step.outcome.error or step.outcome.health.value
        samples = [
            ActiveAlertSample(a.labels, a.state, a.active_at, compiled.rule.labels)
            for a in step.active.values()
            if a.state in (AlertState.PENDING, AlertState.FIRING)
        ]
        self._write(state, build_alert_series(samples, step_ms), step_ms)
        return None

    def _record(
        self, key: RuleKey, rule: RecordingRule, state: _RuleState, step_ms: int
    ) -> str | None:
        try:
            answer = self._query(key, query_text(rule.expr), step_ms)
        except Exception as exc:
            return str(exc)
        series: dict[LabelSet, TimeSeries] = {}
        for sample in answer.samples:
            merged = {**sample.labels.to_dict(), **rule.labels, "__name__": rule.name}
            labels = {k: v for k, v in merged.items() if v}  # an empty rule label removes it
            label_set = LabelSet(labels)
            if label_set in series:
                return RECORD_COLLISION
            series[label_set] = TimeSeries(labels, [(step_ms, sample.value)])
        self._write(state, list(series.values()), step_ms)
        return None

    def _write(self, state: _RuleState, current: list[TimeSeries], step_ms: int) -> None:
        self.pending += current
        self.pending += stale_series(state.written, current, step_ms)
        state.written = current
        if len(self.pending) >= _FLUSH_SAMPLES:
            self.flush()

    def _firing(self, alertname: str) -> list[AlertSeen]:
        """Firing alerts of every rule with this name, in every group (as promtool)."""
        return [
            AlertSeen(tuple(sorted(a.labels.items())), tuple(sorted(a.annotations.items())))
            for state in self.states.values()
            for a in state.active.values()
            if a.state is AlertState.FIRING and a.labels.get("alertname") == alertname
        ]
