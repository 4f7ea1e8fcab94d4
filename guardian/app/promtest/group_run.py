"""Run one test group through the engine against its test Prometheus.

At every ``evaluation_interval`` step from 0 to the group's last ``eval_time`` each rule
group is evaluated in order, rule by rule, with the engine's pure state machine
(``evaluate_alerting_rule``, as ``evaluate_group`` uses it) and its templates, querying
the test Prometheus at ``time=step``. After each rule its output is remote-written at the
step's timestamp, as Prometheus appends it: ``ALERTS``/``ALERTS_FOR_STATE`` of the
engine's pending and firing alerts (``build_alert_series``) with staleness markers for
the ones that ended (``stale_series``), and recording-rule results. Later rules, later
steps and the ``promql_expr_test`` queries therefore see the engine's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from guardian.adapters.prometheus import PrometheusQuerier
from guardian.adapters.remote_write import RemoteWriteClient
from guardian.engine.promtest.compare import (
    AlertSeen,
    alert_tests_at,
    compare_alerts,
    compare_samples,
    eval_steps,
    go_duration,
    go_quote,
)
from guardian.engine.promtest.model import TestGroup
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.engine.rules.alerting import (
    ActiveMap,
    CompiledAlertingRule,
    TemplateEnv,
    evaluate_alerting_rule,
    query_text,
)
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.templates import QuerySample
from guardian.model.alerts import AlertState, EvaluationHealth
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.rules import RecordingRule
from guardian.model.series import ActiveAlertSample, TimeSeries

RECORD_COLLISION = "vector contains metrics with the same labelset after applying rule labels"


@dataclass
class _RuleState:
    active: ActiveMap = field(default_factory=dict)
    written: list[TimeSeries] = field(default_factory=list)


@dataclass
class GroupRun:
    """State of one test group's run: per rule, its active alerts and its last output."""

    groups: Sequence[CompiledGroup]
    test: TestGroup
    querier: PrometheusQuerier
    writer: RemoteWriteClient
    interval_ms: int
    errors: list[str] = field(default_factory=list)
    states: dict[tuple[int, int], _RuleState] = field(default_factory=dict)

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
            state = self.states.setdefault((group_index, rule_index), _RuleState())
            if isinstance(rule, RecordingRule):
                error = self._record(rule, state, step_ms)
            else:
                error = self._alert(next(alerting), group, state, step_ms, env)
            if error is not None:
                errors.append(f"    rule: {rule.name}, time: {go_duration(step_ms)}, err: {error}")
        return errors

    def _alert(
        self,
        compiled: CompiledAlertingRule,
        group: CompiledGroup,
        state: _RuleState,
        step_ms: int,
        env: TemplateEnv,
    ) -> str | None:
        ts = step_ms / 1000
        answer: QueryResult | BaseException
        try:
            answer = self.querier.query(compiled.query, ts)
        except Exception as exc:
            answer = exc

        def template_query(expr: str) -> list[QuerySample]:
            result = self.querier.query(expr, ts)
            return [QuerySample(s.labels.to_dict(), s.value) for s in result.samples]

        step = evaluate_alerting_rule(
            compiled,
            state.active,
            answer,
            ts,
            group=group.name,
            limit=group.group.limit,
            env=env,
            query=template_query,
        )
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

    def _record(self, rule: RecordingRule, state: _RuleState, step_ms: int) -> str | None:
        try:
            answer = self.querier.query(query_text(rule.expr), step_ms / 1000)
        except Exception as exc:
            return str(exc)
        series: dict[LabelSet, TimeSeries] = {}
        for sample in answer.samples:
            merged = {**sample.labels.to_dict(), **rule.labels, "__name__": rule.name}
            labels = {k: v for k, v in merged.items() if v}  # an empty rule label removes it
            key = LabelSet(labels)
            if key in series:
                return RECORD_COLLISION
            series[key] = TimeSeries(labels, [(step_ms, sample.value)])
        self._write(state, list(series.values()), step_ms)
        return None

    def _write(self, state: _RuleState, current: list[TimeSeries], step_ms: int) -> None:
        stale = stale_series(state.written, current, step_ms)
        if current or stale:
            self.writer.write([*current, *stale])
        state.written = current

    def _firing(self, alertname: str) -> list[AlertSeen]:
        """Firing alerts of every rule with this name, in every group (as promtool)."""
        return [
            AlertSeen(tuple(sorted(a.labels.items())), tuple(sorted(a.annotations.items())))
            for state in self.states.values()
            for a in state.active.values()
            if a.state is AlertState.FIRING and a.labels.get("alertname") == alertname
        ]
