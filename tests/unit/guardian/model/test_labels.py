from __future__ import annotations

from guardian.model.labels import LabelSet


def test_identity_ignores_order_and_matches_dicts() -> None:
    a = LabelSet({"b": "2", "a": "1"})
    b = LabelSet({"a": "1", "b": "2"})

    assert a == b
    assert hash(a) == hash(b)
    assert a == {"a": "1", "b": "2"}
    assert list(a) == ["a", "b"]
    assert {a: 1}[b] == 1
    assert a.without("a") == LabelSet({"b": "2"})
    assert a != LabelSet({"a": "1"})
