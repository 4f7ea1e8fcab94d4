"""The engine's fan-out on threads: results in order, errors passed on, at most ``limit``
calls at once, batches inside batches never starve the pool, and a group evaluated with
it decides exactly what one evaluated in order decides."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial

import pytest

from guardian.app.rules.thread_fan_out import ThreadFanOut
from guardian.engine.rules.fan_out import FanOut, in_order
from guardian.engine.rules.group_eval import (
    CompiledGroup,
    GroupEvalOptions,
    GroupState,
    evaluate_group,
)
from guardian.model.alerts import GroupEvaluation
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian.model.rules import AlertingRule, RuleGroup
from guardian_common.errors import TransientError

T0 = 1_700_000_000.0


@pytest.fixture
def fan_out() -> Iterator[ThreadFanOut]:
    pool = ThreadFanOut(3)
    yield pool
    pool.close()


def test_results_come_back_in_the_order_of_the_calls(fan_out: ThreadFanOut) -> None:
    calls = [partial(pow, i, 2) for i in range(50)]
    assert fan_out(calls) == [i * i for i in range(50)]
    assert fan_out([]) == []


def test_the_first_failing_call_in_order_is_raised_after_all_have_run(
    fan_out: ThreadFanOut,
) -> None:
    ran: list[int] = []

    def call(i: int) -> int:
        ran.append(i)
        if i in (3, 7):
            raise ValueError(f"call {i}")
        return i

    with pytest.raises(ValueError, match="call 3"):
        fan_out([partial(call, i) for i in range(10)])
    assert sorted(ran) == list(range(10))


def test_calls_run_at_once_up_to_the_limit_and_never_beyond(fan_out: ThreadFanOut) -> None:
    # Three calls that each wait for the other two: they only finish if all three run
    # at once (a barrier, not a timing).
    barrier = threading.Barrier(3, timeout=10)
    assert fan_out([barrier.wait for _ in range(3)]) is not None

    lock = threading.Lock()
    running, peak = 0, 0
    gate = threading.Event()

    def call() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            if running == 3:
                gate.set()
        gate.wait(timeout=10)
        with lock:
            running -= 1

    fan_out([call for _ in range(12)])
    assert peak == 3


def test_one_is_the_order_of_the_calls_in_the_calling_thread() -> None:
    pool = ThreadFanOut(1)
    caller = threading.get_ident()
    assert pool([threading.get_ident for _ in range(4)]) == [caller] * 4
    pool.close()


def test_batches_inside_batches_finish_when_every_helper_is_busy() -> None:
    # One helper thread, taken by the outer batch: the inner batches run in their callers.
    pool = ThreadFanOut(2)

    def one(i: int, j: int) -> int:
        return i * 10 + j

    def inner(i: int) -> list[int]:
        return pool([partial(one, i, j) for j in range(5)])

    outer = pool([partial(inner, i) for i in range(6)])
    assert outer == [[i * 10 + j for j in range(5)] for i in range(6)]
    pool.close()


# -- a group evaluated at once decides what it decides in order ---------------------------

PEAK = 'peak{i="%s"}'


def _group() -> CompiledGroup:
    note = '{{ with query (printf "peak{i=%q}" $labels.i) }}{{ . | first | value }}{{ end }}'
    rules = (
        AlertingRule("Low", "low", for_seconds=60, annotations={"peak": note}),
        AlertingRule("High", "high", annotations={"v": "{{ $value }}"}),
        AlertingRule("Broken", "broken", for_seconds=120),
        AlertingRule("Same", "same", labels={"i": "one"}),
    )
    return CompiledGroup.compile(RuleGroup("g", "f.yaml", rules), 60)


def _query(step: int, barrier: threading.Barrier | None) -> Callable[[str, float], QueryResult]:
    """Answers that move with ``step``: alerts come and go, a rule fails at step 2, a rule's
    samples collide after templating, template answers change."""

    def vector(metric: str, present: range) -> QueryResult:
        return QueryResult(
            tuple(
                PromSample(LabelSet({"__name__": metric, "i": str(i)}), float(i + step))
                for i in present
            )
        )

    def query(expr: str, ts: float) -> QueryResult:
        assert ts == T0 + 60 * step
        if expr.startswith("peak"):
            i = int(expr.split('"')[1])
            return QueryResult((PromSample(LabelSet({"i": str(i)}), float((i * step) % 3)),))
        if barrier is not None:
            barrier.wait()  # every rule's query is in flight at once
        if expr == "broken" and step == 2:
            raise TransientError("connection refused")
        sizes = {"low": range(step, step + 20), "high": range(0, 5 - step % 2)}
        return vector(expr, sizes.get(expr, range(3)))

    return query


def _run(fan_out: FanOut, barrier: threading.Barrier | None) -> list[GroupEvaluation]:
    group = _group()
    state: GroupState = {}
    evaluations = []
    for step in range(6):
        state, evaluation = evaluate_group(
            group, state, T0 + 60 * step, _query(step, barrier), GroupEvalOptions(fan_out=fan_out)
        )
        evaluations.append(evaluation)
    return evaluations


def test_a_group_evaluated_at_once_decides_what_it_decides_in_order() -> None:
    pool = ThreadFanOut(4)
    at_once = _run(pool, threading.Barrier(4, timeout=10))
    pool.close()
    in_turn = _run(in_order, None)
    assert at_once == in_turn
    # The alerts moved: transitions, a failed rule, a collision and annotations from the
    # template queries are all in what was compared.
    assert sum(len(e.transitions) for e in in_turn) > 20
    errors = {o.error for e in in_turn for o in e.outcomes if o.error}
    assert any("connection refused" in e for e in errors)
    assert any("same labelset" in e for e in errors)
    notes = {t.annotations["peak"] for e in in_turn for t in e.transitions if t.rule == "Low"}
    assert notes >= {"0", "1", "2"}


def test_once_closed_the_calls_run_in_the_calling_thread() -> None:
    pool = ThreadFanOut(3)
    pool.close()
    caller = threading.get_ident()
    assert pool([threading.get_ident for _ in range(4)]) == [caller] * 4
