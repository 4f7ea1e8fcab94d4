"""Evaluate one rule group at one timestamp: every alerting rule, one query each.

The query function is injected; it raises TransientError/PermanentError (or anything
else) on failure, and each rule's failure is kept to that rule. The rules go through
``fan_out`` (in order by default): no rule reads another's result within an evaluation
(ALERTS are written once the group is done), so running them at once decides the same,
and outcomes and transitions keep the rules' order.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from guardian.engine.rules.alerting import ActiveMap, RuleContext, RuleStep, evaluate_alerting_rule
from guardian.engine.rules.compiled import CompiledAlertingRule, TemplateEnv
from guardian.engine.rules.fan_out import FanOut, in_order
from guardian.engine.rules.sharding import QueryFn, Sharding, sharded_query
from guardian.engine.templates import QuerySample
from guardian.model.alerts import Alert, AlertTransition, GroupEvaluation
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult
from guardian.model.rules import RuleGroup

logger = logging.getLogger(__name__)

GroupState = Mapping[str, ActiveMap]  # rule key -> active map


@dataclass(frozen=True)
class CompiledGroup:
    """A group ready to evaluate: interval resolved, templates parsed, rule keys unique."""

    group: RuleGroup
    interval_seconds: float
    rules: tuple[tuple[str, CompiledAlertingRule], ...]

    @classmethod
    def compile(cls, group: RuleGroup, default_interval_seconds: float) -> CompiledGroup:
        seen: dict[str, int] = {}
        rules: list[tuple[str, CompiledAlertingRule]] = []
        for rule in group.alerting_rules:
            count = seen.get(rule.key, 0)
            seen[rule.key] = count + 1
            key = rule.key if count == 0 else f"{rule.key}#{count}"
            rules.append((key, CompiledAlertingRule.compile(rule)))
        interval = group.interval_seconds or default_interval_seconds
        return cls(group, interval, tuple(rules))

    @property
    def key(self) -> str:
        return self.group.key

    @property
    def name(self) -> str:
        return self.group.name


@dataclass(frozen=True)
class GroupEvalOptions:
    """How a group's rules are asked. ``monotonic`` times each rule (None: untimed);
    ``sharding``: a rule's query may be asked in shards at once (engine/rules/sharding.py)."""

    env: TemplateEnv | None = None
    monotonic: Callable[[], float] | None = None
    fan_out: FanOut = in_order
    sharding: Sharding | None = None


def evaluate_group(
    compiled: CompiledGroup,
    state: GroupState,
    ts: float,
    query: QueryFn,
    options: GroupEvalOptions = GroupEvalOptions(),
) -> tuple[dict[str, dict[LabelSet, Alert]], GroupEvaluation]:
    """All alerting rules of the group at ``ts``. Returns the new state and what happened."""
    env = options.env or TemplateEnv({})
    monotonic, fan_out, sharding = options.monotonic, options.fan_out, options.sharding

    def template_query(expr: str) -> list[QuerySample]:
        return [QuerySample(s.labels.to_dict(), s.value) for s in query(expr, ts).samples]

    def run(key: str, rule: CompiledAlertingRule) -> RuleStep:
        started = monotonic() if monotonic else 0.0
        answer: QueryResult | BaseException
        try:
            answer = sharded_query(rule.query, ts, query, fan_out, sharding)
        except Exception as exc:  # per rule: the others are still evaluated
            logger.warning("rule %s in group %s failed: %s", rule.rule.name, compiled.name, exc)
            answer = exc
        context = RuleContext(compiled.name, compiled.group.limit, env, template_query, fan_out)
        step = evaluate_alerting_rule(rule, state.get(key, {}), answer, ts, context)
        if monotonic is None:
            return step
        outcome = dataclasses.replace(step.outcome, duration_seconds=monotonic() - started)
        return dataclasses.replace(step, outcome=outcome)

    steps = fan_out([partial(run, key, rule) for key, rule in compiled.rules])
    new_state: dict[str, dict[LabelSet, Alert]] = {}
    transitions: list[AlertTransition] = []
    for (key, _), step in zip(compiled.rules, steps, strict=True):
        new_state[key] = step.active
        transitions.extend(step.transitions)
    evaluation = GroupEvaluation(
        group=compiled.name,
        file=compiled.group.file,
        ts=ts,
        outcomes=tuple(step.outcome for step in steps),
        transitions=tuple(transitions),
    )
    return new_state, evaluation
