"""GroupReplay gives the transitions evaluate_group gives, annotations included."""

from __future__ import annotations

from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup, GroupEvalOptions, evaluate_group
from guardian.engine.simulate.rule_replay import GroupReplay
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule, RuleGroup

RULE = AlertingRule(
    name="Busy",
    expr="x > 1",
    for_seconds=120.0,
    keep_firing_for_seconds=60.0,
    labels={"severity": "warning", "level": "{{ if gt $value 5.0 }}high{{ else }}low{{ end }}"},
    annotations={"description": "{{ $labels.instance }} at {{ $value }}"},
)
GROUP = CompiledGroup.compile(RuleGroup("g", "f.yaml", (RULE,), 60.0, limit=3), 60.0)


def answer(step: int) -> QueryResult | BaseException:
    if step == 7:
        return TimeoutError("query timed out")  # a failed evaluation changes nothing
    values = {"a": [0, 2, 3, 4, 6, 7, 0, 9, 9, 0, 0, 0, 2, 2], "b": [2] * 14}
    samples = tuple(
        PromSample(LabelSet({"__name__": "x", "instance": i}), float(v[step]))
        for i, v in values.items()
        if v[step] > 1
    )
    if step == 11:  # more alerts than the limit: cleared
        samples += tuple(PromSample(LabelSet({"instance": f"z{n}"}), 3.0) for n in range(3))
    return QueryResult(samples)


def test_replay_matches_evaluate_group_step_by_step() -> None:
    env = TemplateEnv({"cluster": "c1"})
    state: dict = {}
    replay = GroupReplay(GROUP, env)
    (key,) = replay.rule_keys
    for step in range(14):
        ts = 1_000.0 + step * 60

        def query(_expr: str, _ts: float, step: int = step) -> QueryResult:
            result = answer(step)
            if isinstance(result, BaseException):
                raise result
            return result

        state, live = evaluate_group(GROUP, state, ts, query, GroupEvalOptions(env=env))
        replayed = replay.step(ts, {key: answer(step)})
        assert replayed.transitions == live.transitions, f"step {step}"
        assert [o.health for o in replayed.outcomes] == [o.health for o in live.outcomes]
        active = {a.labels: (a.state, a.active_at, a.value) for a in replay.active_alerts()}
        assert active == {
            a.labels: (a.state, a.active_at, a.value) for a in state[key].values() if a.is_active
        }
