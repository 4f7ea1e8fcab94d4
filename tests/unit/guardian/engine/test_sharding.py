"""A rule's query asked in shards and joined (guardian/engine/rules/sharding.py)."""

from __future__ import annotations

import logging
import re

import pytest

from guardian.engine.rules.fan_out import in_order
from guardian.engine.rules.sharding import Sharding, sharded_query
from guardian.model.labels import LabelSet
from guardian.model.query import PromSample, QueryResult
from guardian_common.errors import PermanentError

RULE = "sum by (uuid) (x) < 1"
UUIDS = ["GPU-0", "GPU-1", "GPU-2", "GPU-3"]


class FakePrometheus:
    """Answers ``sum by (uuid) (x) < 1`` for the uuids its matchers select (each
    ``uuid=~"…"`` / ``uuid!~"…"`` read as RE2 would read it), recording every query."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.extra: dict[str, list[PromSample]] = {}

    def __call__(self, text: str, ts: float) -> QueryResult:
        self.asked.append(text)
        matchers = re.findall(r'uuid(=~|!~)"((?:[^"\\]|\\.)*)"', text)
        selected = [u for u in UUIDS if all(self._keeps(op, p, u) for op, p in matchers)]
        samples = [PromSample(LabelSet({"uuid": u}), 0.5) for u in selected]
        return QueryResult((*samples, *self.extra.get(text, [])), ("w",))

    @staticmethod
    def _keeps(op: str, pattern: str, value: str) -> bool:
        pattern = pattern.replace("\\\\", "\\")
        python = re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m[1], 16):08x}", pattern)
        return bool(re.fullmatch(python, value)) == (op == "=~")


def _sharding(shards: int = 2, values: list[str] | None = None) -> Sharding:
    return Sharding(shards, ("uuid",), lambda _label, _ts: UUIDS if values is None else values)


def test_a_splittable_rule_is_asked_in_shards_and_joined() -> None:
    prom = FakePrometheus()
    answer = sharded_query(RULE, 10.0, prom, in_order, _sharding())
    assert len(prom.asked) == 2
    assert [s.labels.to_dict()["uuid"] for s in answer.samples] == UUIDS
    assert answer.warnings == ("w",)  # the same warning of each shard, once
    assert sharded_query(RULE, 10.0, prom, in_order, _sharding(4)).samples == answer.samples
    assert len(prom.asked) == 2 + 4


@pytest.mark.parametrize(
    ("text", "sharding"),
    [
        (RULE, None),
        (RULE, _sharding(1)),
        (RULE, _sharding(values=[])),  # values unknown
        (RULE, _sharding(values=["GPU-0"])),  # one value: nothing to split
        ("sum(x) < 1", _sharding()),  # crosses uuids
    ],
)
def test_asked_whole(text: str, sharding: Sharding | None) -> None:
    prom = FakePrometheus()
    sharded_query(text, 10.0, prom, in_order, sharding)
    assert prom.asked == [text]


def test_answers_that_overlap_are_not_trusted(caplog: pytest.LogCaptureFixture) -> None:
    prom = FakePrometheus()
    first = _shards()[0]
    prom.extra[first] = [PromSample(LabelSet({"uuid": "GPU-3"}), 0.5)]  # also in shard 2
    with caplog.at_level(logging.ERROR):
        answer = sharded_query(RULE, 10.0, prom, in_order, _sharding())
    assert prom.asked[-1] == RULE
    assert len(answer.samples) == 4
    assert "same series twice" in caplog.text


def _shards() -> list[str]:
    prom = FakePrometheus()
    sharded_query(RULE, 10.0, prom, in_order, _sharding())
    return prom.asked


def test_a_shard_that_fails_fails_the_rule() -> None:
    def query(text: str, ts: float) -> QueryResult:
        if "!~" in text:
            raise PermanentError("bad_data: many-to-many matching not allowed")
        return QueryResult(())

    with pytest.raises(PermanentError, match="many-to-many"):
        sharded_query(RULE, 10.0, query, in_order, _sharding())
