"""Pass 1 of a simulation: the rule pack's alert timeline over history.

For each chunk of the range and each group, the group's evaluation slots in the chunk
(``slot_at_or_before``, as the scheduler uses them) are one range query per rule, of the
text the engine queries (the expression as Prometheus prints it, ``compiled.query``):
Prometheus evaluates a range query's every step exactly as an instant query at that
time, so each step's vector is what the engine would have got. The vectors then go
through the engine's own state machine (:class:`GroupReplay`), all groups interleaved in
time order. A rule whose expression uses ``@ start()`` or ``@ end()`` (which mean the
range's ends in a range query, but the evaluation time in an instant query) is
evaluated with one instant query per step instead.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from guardian.app.history.fetch import Chunk, RangeFetcher, plan_chunks
from guardian.app.history.progress import NoProgress, Progress
from guardian.engine.remediation.guards import group_health
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.slots import slot_at_or_before
from guardian.engine.simulate.rule_replay import Answer, EvaluationRecord, GroupReplay
from guardian.engine.simulate.steps import vectors_by_step
from guardian.model.alerts import AlertTransition
from guardian.model.history import TimeRange
from guardian.model.query import MatrixResult, QueryResult

InstantQuery = Callable[[str, float], QueryResult]
_RANGE_ENDS = re.compile(r"@\s*(start|end)\s*\(\s*\)")


def needs_instant(expr: str) -> bool:
    """True when a range query would not give the instant answer at every step."""
    return bool(_RANGE_ENDS.search(expr))


@dataclass
class Timeline:
    evaluations: list[EvaluationRecord] = field(default_factory=list)
    queries: int = 0
    instant_rules: tuple[str, ...] = ()  # rules replayed with instant queries

    @property
    def transitions(self) -> Iterator[AlertTransition]:
        for record in self.evaluations:
            yield from record.transitions


@dataclass(frozen=True)
class TimelineRequest:
    groups: Sequence[CompiledGroup]
    span: TimeRange  # start and end of the replay; its step is the chunking unit
    env: TemplateEnv
    chunk_seconds: float = 86400.0
    max_points: int = 11_000


def group_slots(group: CompiledGroup, start: float, end: float) -> list[int]:
    """The group's slot timestamps (ms) in ``[start, end]``."""
    interval = group.interval_seconds
    first = slot_at_or_before(start, group.group.file, group.name, interval)
    if first < start:
        first = round((first + interval) * 1000) / 1000
    step_ms = round(interval * 1000)
    out = []
    ts = round(first * 1000)
    while ts <= round(end * 1000):
        out.append(ts)
        ts += step_ms
    return out


@dataclass(eq=False)
class TimelineBuilder:
    request: TimelineRequest
    fetcher: RangeFetcher
    instant: InstantQuery
    progress: Progress = field(default_factory=NoProgress)

    def __post_init__(self) -> None:
        env = self.request.env
        self.replays = [GroupReplay(g, env, self.instant) for g in self.request.groups]

    def build(self) -> Timeline:
        request = self.request
        # Chunks are cut on the finest group interval; each group takes its own slots.
        finest = min(g.interval_seconds for g in request.groups)
        chunking = TimeRange(request.span.start, request.span.end, finest)
        chunks = plan_chunks(chunking, request.chunk_seconds, request.max_points)
        timeline = Timeline(
            instant_rules=tuple(
                f"{g.name}/{r.rule.name}"
                for g in request.groups
                for _key, r in g.rules
                if needs_instant(r.query)
            )
        )
        for n, chunk in enumerate(chunks, start=1):
            end = chunks[n].span.start if n < len(chunks) else request.span.end + 0.0005
            self._chunk(chunk, end, timeline)
            self.progress.update(n, len(chunks), chunk.describe())
        self.progress.close()
        timeline.queries = self.fetcher.queries
        return timeline

    def _chunk(self, chunk: Chunk, end: float, timeline: Timeline) -> None:
        """Every group's slots in ``[chunk start, end)``, interleaved in time order."""
        per_group: list[tuple[list[int], dict[str, list[Answer]]]] = []
        for group in self.request.groups:
            slots = [s for s in group_slots(group, chunk.span.start, end) if s < end * 1000]
            per_group.append((slots, self._answers(group, slots, chunk) if slots else {}))
        order = heapq.merge(
            *[
                [(ts, gi, si) for si, ts in enumerate(slots)]
                for gi, (slots, _) in enumerate(per_group)
            ]
        )
        for ts_ms, gi, si in order:
            answers = {key: values[si] for key, values in per_group[gi][1].items()}
            evaluation = self.replays[gi].step(ts_ms / 1000, answers)
            timeline.evaluations.append(
                EvaluationRecord(group_health(evaluation), evaluation.transitions)
            )

    def _answers(
        self, group: CompiledGroup, slots: list[int], chunk: Chunk
    ) -> dict[str, list[Answer]]:
        span = TimeRange(slots[0] / 1000, slots[-1] / 1000, group.interval_seconds)
        out: dict[str, list[Answer]] = {}
        for key, compiled in group.rules:
            expr = compiled.query  # the text the engine sends: as Prometheus prints it
            what = f"rule {compiled.rule.name} of group {group.name}"
            if needs_instant(expr):
                out[key] = [self._instant(expr, ts / 1000) for ts in slots]
                continue
            result: MatrixResult = self.fetcher.fetch_chunk(expr, _chunk_of(chunk, span), what)
            out[key] = list(vectors_by_step(result, slots))
        return out

    def _instant(self, expr: str, ts: float) -> Answer:
        self.fetcher.queries += 1
        try:
            return self.instant(expr, ts)
        except Exception as exc:  # per step: a failed step is a failed evaluation, as live
            return exc


def _chunk_of(chunk: Chunk, span: TimeRange) -> Chunk:
    return Chunk(chunk.index, chunk.total, span)
