"""The label values that place shard boundaries: asked at most every few minutes, and
never in the way of an evaluation."""

from __future__ import annotations

from guardian.app.rules.shard_values import LabelValuesCache
from guardian_common.errors import TransientError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_values_are_kept_for_five_minutes_per_label() -> None:
    asked: list[tuple[str, float, float]] = []

    def fetch(label: str, start: float, end: float) -> list[str]:
        asked.append((label, start, end))
        return [f"{label}-{len(asked)}"]

    clock = Clock()
    values = LabelValuesCache(fetch, monotonic=clock)
    assert values("uuid", 7200.0) == ["uuid-1"]
    assert asked == [("uuid", 3600.0, 7200.0)]  # series of the last hour
    clock.now = 299.0
    assert values("uuid", 7500.0) == ["uuid-1"]
    assert values("node", 7500.0) == ["node-2"]
    clock.now = 300.0
    assert values("uuid", 7600.0) == ["uuid-3"]


def test_a_failed_fetch_gives_no_values_until_the_next_try() -> None:
    calls = 0

    def fetch(label: str, start: float, end: float) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TransientError("cannot reach prometheus")
        return ["a", "b"]

    clock = Clock()
    values = LabelValuesCache(fetch, monotonic=clock)
    assert values("uuid", 100.0) == []
    assert values("uuid", 100.0) == []
    assert calls == 1
    clock.now = 301.0
    assert values("uuid", 100.0) == ["a", "b"]
