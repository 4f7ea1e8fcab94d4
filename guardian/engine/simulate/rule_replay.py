"""One rule group replayed step by step with the engine's own state machine.

Each step gets, per rule, the instant answer it would have had (from a range query's
matrix or an instant query) and goes through ``evaluate_alerting_rule`` exactly as
``evaluate_group`` does. Annotations do not change any state, so the replay runs each
rule without them (no template expansion per sample and step) and expands them only
for the transitions, from the sample each alert was last seen with: the same text the
engine holds, because the engine re-expands an alert's annotations at every healthy
evaluation that sees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from guardian.engine.rules.alerting import RuleContext, evaluate_alerting_rule
from guardian.engine.rules.compiled import CompiledAlertingRule, TemplateEnv
from guardian.engine.rules.expansion import expand_sample
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.templates import QuerySample
from guardian.model.alerts import (
    Alert,
    AlertState,
    AlertTransition,
    EvaluationHealth,
    GroupEvaluation,
    RuleOutcome,
)
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.reclaim import GroupHealth

# The template ``query`` function at one step: an instant query at that step's time.
StepQuery = Callable[[str, float], QueryResult]
Answer = QueryResult | BaseException

_PRUNE_EVERY = 256  # steps between drops of last-seen samples of forgotten alerts


@dataclass(frozen=True)
class EvaluationRecord:
    """One group evaluation of a replay: its health and the transitions it caused."""

    health: GroupHealth
    transitions: tuple[AlertTransition, ...]


def _lean(compiled: CompiledAlertingRule) -> CompiledAlertingRule:
    """The rule without annotations: the same identities and states, no expansion."""
    rule = dataclasses.replace(compiled.rule, annotations={})
    return CompiledAlertingRule.compile(rule)


@dataclass
class _RuleReplay:
    key: str
    full: CompiledAlertingRule
    lean: CompiledAlertingRule
    active: dict[LabelSet, Alert] = field(default_factory=dict)
    # alert labels -> (the sample it was last seen with, that step's time)
    seen: dict[LabelSet, tuple[PromSample, float]] = field(default_factory=dict)
    # series labels -> alert labels, for rules whose labels are not templated
    identity: dict[LabelSet, LabelSet] = field(default_factory=dict)


class GroupReplay:
    """A group's alert state over a sequence of steps, as the engine would have held it."""

    def __init__(
        self, compiled: CompiledGroup, env: TemplateEnv, query: StepQuery | None = None
    ) -> None:
        self.compiled = compiled
        self.env = env
        self._query = query
        self._rules = [_RuleReplay(key, rule, _lean(rule)) for key, rule in compiled.rules]
        self._steps = 0

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def rule_keys(self) -> tuple[str, ...]:
        return tuple(r.key for r in self._rules)

    def active_alerts(self) -> Iterable[Alert]:
        """Pending and firing alerts now (annotations left out)."""
        for rule in self._rules:
            for alert in rule.active.values():
                if alert.state is not AlertState.INACTIVE:
                    yield alert

    def step(self, ts: float, answers: Mapping[str, Answer]) -> GroupEvaluation:
        """Evaluate every rule at ``ts`` from ``answers`` (rule key -> answer or error)."""
        template_query = self._template_query(ts)
        outcomes: list[RuleOutcome] = []
        transitions: list[AlertTransition] = []
        for rule in self._rules:
            answer = answers.get(rule.key)
            if answer is None:
                answer = LookupError(f"no answer for rule {rule.key} at {ts}")
            steady = self._steady(rule, answer, ts)
            if steady is not None:
                outcomes.append(steady)
                continue
            context = RuleContext(
                self.compiled.name, self.compiled.group.limit, self.env, template_query
            )
            result = evaluate_alerting_rule(rule.lean, rule.active, answer, ts, context)
            if result.outcome.health is EvaluationHealth.OK and isinstance(answer, QueryResult):
                self._remember(rule, answer, ts, template_query)
            rule.active = result.active
            outcomes.append(result.outcome)
            transitions.extend(self._annotated(rule, t) for t in result.transitions)
        self._steps += 1
        if self._steps % _PRUNE_EVERY == 0:
            for rule in self._rules:
                rule.seen = {k: v for k, v in rule.seen.items() if k in rule.active}
        return GroupEvaluation(
            group=self.compiled.name,
            file=self.compiled.group.file,
            ts=ts,
            outcomes=tuple(outcomes),
            transitions=tuple(transitions),
        )

    def _steady(self, rule: _RuleReplay, answer: Answer, ts: float) -> RuleOutcome | None:
        """The common step of a long replay, without the state machine: a healthy answer
        whose samples are exactly the rule's alerts, all firing and none held by
        ``keep_firing_for``. ``evaluate_alerting_rule`` would only update their values
        (no transition), so that is done here; anything else goes to it. None: not this
        case. Needs labels that are not templated (the identities are cached per series)."""
        active = rule.active
        if (
            not isinstance(answer, QueryResult)
            or answer.warnings
            or answer.partial
            or not active
            or len(answer.samples) != len(active)
            or (0 < self.compiled.group.limit < len(active))
        ):
            return None
        identity = rule.identity
        values: dict[LabelSet, float] = {}
        for sample in answer.samples:
            labels = identity.get(sample.labels)
            if labels is None or labels in values:
                return None
            values[labels] = sample.value
        new: dict[LabelSet, Alert] = {}
        for labels, alert in active.items():
            value = values.get(labels)
            if value is None or alert.state is not AlertState.FIRING:
                return None
            if alert.keep_firing_since is not None:
                return None
            same = value == alert.value or (value != value and alert.value != alert.value)
            new[labels] = alert if same else dataclasses.replace(alert, value=value)
        rule.active = new
        seen = rule.seen
        for sample in answer.samples:
            seen[identity[sample.labels]] = (sample, ts)
        return RuleOutcome(rule.lean.rule.name, EvaluationHealth.OK, samples=len(values))

    def _template_query(self, ts: float) -> Callable[[str], list[QuerySample]] | None:
        query = self._query
        if query is None:
            return None

        def at_step(expr: str) -> list[QuerySample]:
            return [QuerySample(s.labels.to_dict(), s.value) for s in query(expr, ts).samples]

        return at_step

    def _remember(
        self,
        rule: _RuleReplay,
        answer: QueryResult,
        ts: float,
        template_query: Callable[[str], list[QuerySample]] | None,
    ) -> None:
        seen, identity = rule.seen, rule.identity
        static_labels = not any(not isinstance(p, str) for _, p in rule.lean.labels)
        for sample in answer.samples:
            labels = identity.get(sample.labels) if static_labels else None
            if labels is None:
                labels, _ = expand_sample(rule.lean, sample, self.env, template_query)
                if static_labels:
                    identity[sample.labels] = labels
            seen[labels] = (sample, ts)

    def _annotated(self, rule: _RuleReplay, t: AlertTransition) -> AlertTransition:
        found = rule.seen.get(t.labels)
        if found is None:
            return t
        sample, seen_at = found
        _, notes = expand_sample(rule.full, sample, self.env, self._template_query(seen_at))
        return dataclasses.replace(t, annotations=notes)
