"""A rule's query split into shards asked at once (``guardian/engine/promql/shard.py``).

Prometheus evaluates one PromQL query on one thread (1.2-1.4 cores with its garbage
collector), so a group that one dear rule
dominates takes as long as that rule however many queries the engine keeps in flight.
A rule whose expression works per value of a label (``uuid``, ``node``…) is asked as
``shards`` queries, each over a part of that label's values, and their answers are
joined: the same samples, as the split keeps every series' computation within one
shard. The boundaries come from the label's values (``values``, injected); when they
cannot be had, or the answers overlap (which the split rules out), the query is asked
whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from guardian.engine.promql.shard import pivots, query_split_label, shard_queries
from guardian.engine.rules.fan_out import FanOut
from guardian.model.labels import LabelSet
from guardian.model.query import QueryResult

logger = logging.getLogger(__name__)

QueryFn = Callable[[str, float], QueryResult]
ValuesFn = Callable[[str, float], Sequence[str]]  # a label's values near a time


@dataclass(frozen=True)
class Sharding:
    shards: int
    labels: tuple[str, ...]  # the labels to split on, the first that fits
    values: ValuesFn


def _joined(answers: Sequence[QueryResult]) -> QueryResult | None:
    """The shards' answers as one, or None if two hold the same series."""
    seen: set[LabelSet] = set()
    samples = []
    warnings: dict[str, None] = {}
    for answer in answers:
        for sample in answer.samples:
            if sample.labels in seen:
                return None
            seen.add(sample.labels)
            samples.append(sample)
        warnings.update(dict.fromkeys(answer.warnings))
    partial_answer = any(a.partial for a in answers)
    return QueryResult(tuple(samples), tuple(warnings), partial_answer)


def sharded_query(
    text: str, ts: float, query: QueryFn, fan_out: FanOut, sharding: Sharding | None
) -> QueryResult:
    """``query(text, ts)``, asked in shards at once where the expression allows."""
    if sharding is None or sharding.shards < 2:
        return query(text, ts)
    label = query_split_label(text, sharding.labels)
    if label is None:
        return query(text, ts)
    cuts = tuple(pivots(sharding.values(label, ts), sharding.shards))
    if not cuts:
        return query(text, ts)
    answers = fan_out([partial(query, q, ts) for q in shard_queries(text, label, cuts)])
    joined = _joined(answers)
    if joined is None:
        logger.error("shards on %s returned the same series twice: asking whole: %s", label, text)
        return query(text, ts)
    return joined
