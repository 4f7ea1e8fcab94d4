"""An alerting rule's labels and annotations, expanded per sample and memoised.

Expansion is a pure function of the sample's labels and value, the external labels and,
for templates that call ``query``, the answers to those queries, so a rule keeps each
sample's expansion from one evaluation to the next: with ``query`` calls, they are asked
again and the expansion is reused when every answer is the same.

The samples of a rule whose templates call ``query`` are expanded through ``fan_out``:
each expansion waits on its own queries, so a pool may run them at once (one query per
alert, thousands a cycle at fleet scale). The memo is read while they run and replaced
once all are done.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from guardian.engine.rules.compiled import (
    CompiledAlertingRule,
    MemoEntry,
    QueryLog,
    TemplateEnv,
    TemplateQuery,
)
from guardian.engine.rules.fan_out import FanOut, in_order
from guardian.engine.templates import QuerySample, Template, TemplateContext
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult

Fetched = dict[str, Sequence[QuerySample] | Exception]
Expansion = tuple[LabelSet, LabelSet, QueryLog]  # alert labels, annotations, queries made


def same_value(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN is unchanged NaN


def _expand(part: Template | str, ctx: TemplateContext) -> str:
    return part if isinstance(part, str) else part.expand(ctx)


def _alert_labels(
    compiled: CompiledAlertingRule, sample: PromSample, ctx: TemplateContext | None
) -> LabelSet:
    labels = sample.labels.to_dict()
    labels.pop("__name__", None)
    for name, part in compiled.labels:
        value = _expand(part, ctx) if ctx is not None else str(part)
        if value:
            labels[name] = value
        else:
            labels.pop(name, None)  # an empty value deletes the label, as labels.Builder
    labels["alertname"] = compiled.rule.name
    return LabelSet(labels)


def expand_sample(
    compiled: CompiledAlertingRule,
    sample: PromSample,
    env: TemplateEnv,
    query: TemplateQuery | None,
) -> tuple[LabelSet, LabelSet]:
    """The alert labels and annotations one sample gives (public: a replay over history
    expands annotations only where a transition needs them)."""
    if compiled.static:
        return _alert_labels(compiled, sample, None), LabelSet(compiled.rule.annotations)
    ctx = TemplateContext(
        labels=sample.labels.to_dict(),
        value=sample.value,
        external_labels=dict(env.external_labels),
        external_url=env.external_url,
        query=query,
    )
    notes = LabelSet({k: _expand(p, ctx) for k, p in compiled.annotations})
    return _alert_labels(compiled, sample, ctx), notes


def _logged_expansion(
    compiled: CompiledAlertingRule,
    sample: PromSample,
    env: TemplateEnv,
    query: TemplateQuery | None,
) -> Expansion:
    """``expand_sample``, with the template queries it made."""
    if not compiled.uses_query or query is None:
        key, notes = expand_sample(compiled, sample, env, query)
        return key, notes, None if compiled.uses_query else ()
    ask = query
    log: list[tuple[str, Sequence[QuerySample]]] = []
    failed = False

    def logged(expr: str) -> Sequence[QuerySample]:
        nonlocal failed
        try:
            answer = ask(expr)
        except BaseException:
            failed = True
            raise
        log.append((expr, answer))
        return answer

    key, notes = expand_sample(compiled, sample, env, logged)
    return key, notes, None if failed else tuple(log)


def _same_answers(log: QueryLog, query: TemplateQuery | None, fetched: Fetched) -> bool:
    """Whether a memoised expansion's queries get the answers they got then (each one
    asked again; what came back, or the error, is left in ``fetched`` for a new
    expansion to use)."""
    if not log:
        return log is not None
    if query is None:
        return False
    for expr, before in log:
        try:
            now = query(expr)
        except Exception as exc:  # per item: the expansion that follows reports it its way
            fetched[expr] = exc
            return False
        fetched[expr] = now
        if now != before:  # a NaN never equals itself: expanded again
            return False
    return True


def _prefetched(fetched: Fetched, query: TemplateQuery) -> TemplateQuery:
    def ask(expr: str) -> Sequence[QuerySample]:
        got = fetched.get(expr)
        if isinstance(got, Exception):
            raise got
        return query(expr) if got is None else got

    return ask


def _sample_expansion(
    compiled: CompiledAlertingRule,
    env: TemplateEnv,
    query: TemplateQuery | None,
    sample: PromSample,
) -> Expansion:
    """The memoised expansion if it still holds, else a new one."""
    hit: MemoEntry | None = compiled.memo.get(sample.labels)
    fetched: Fetched = {}
    if (
        hit is not None
        and same_value(hit[0], sample.value)
        and (hit[1] is env or hit[1] == env)
        and _same_answers(hit[4], query, fetched)
    ):
        return hit[2], hit[3], hit[4]
    asked = _prefetched(fetched, query) if fetched and query is not None else query
    return _logged_expansion(compiled, sample, env, asked)


def candidates(
    compiled: CompiledAlertingRule,
    answer: QueryResult,
    env: TemplateEnv,
    query: TemplateQuery | None,
    fan_out: FanOut = in_order,
) -> dict[LabelSet, tuple[float, LabelSet]] | None:
    """Alert labels -> (value, annotations) per sample; None on a label-set collision."""
    expand = partial(_sample_expansion, compiled, env, query)
    samples = answer.samples
    if compiled.uses_query and query is not None and len(samples) > 1:
        expansions = fan_out([partial(expand, sample) for sample in samples])
    else:
        expansions = [expand(sample) for sample in samples]
    out: dict[LabelSet, tuple[float, LabelSet]] = {}
    fresh: dict[LabelSet, MemoEntry] = {}
    for sample, (key, notes, log) in zip(samples, expansions, strict=True):
        fresh[sample.labels] = (sample.value, env, key, notes, log)
        if key in out:
            return None
        out[key] = (sample.value, notes)
    compiled.memo.clear()
    compiled.memo.update(fresh)
    return out
