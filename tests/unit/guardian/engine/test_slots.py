from __future__ import annotations

import os

import pytest

from guardian.engine.rules.slots import (
    group_hash,
    next_slot_after,
    slot_at_or_before,
    slot_offset_ns,
    xxhash64,
)


@pytest.mark.parametrize(
    ("data", "digest"),
    [
        # Reference values of XXH64 with seed 0.
        (b"", 0xEF46DB3751D8E999),
        (b"a", 0xD24EC4F1A98C6E5B),
        (b"abc", 0x44BC2CF5AD770999),
        (b"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1),
    ],
)
def test_xxhash64_reference_values(data: bytes, digest: int) -> None:
    assert xxhash64(data) == digest


def test_group_hash_is_the_label_set_hash() -> None:
    assert group_hash("f.yaml", "g") == xxhash64(b"file\xfff.yaml\xffname\xffg\xff")


def test_slots_are_fixed_and_spread_by_group() -> None:
    interval = 60.0
    offset = slot_offset_ns("f.yaml", "g", interval) / 1e9
    assert 0 <= offset < interval
    now = 1_700_000_123.456
    slot = slot_at_or_before(now, "f.yaml", "g", interval)
    assert slot <= now < slot + interval
    # On the group's offset, truncated to milliseconds as Prometheus's timestamp.FromTime.
    offset_ms = slot_offset_ns("f.yaml", "g", interval) // 1_000_000
    assert round(slot * 1000) % 60_000 == offset_ms
    # The same slot whatever moment inside it we ask.
    assert slot_at_or_before(slot + 59.9, "f.yaml", "g", interval) == slot
    assert next_slot_after(now, "f.yaml", "g", interval) == slot + interval
    offsets = {slot_offset_ns("f.yaml", name, interval) for name in "abcdefgh"}
    assert len(offsets) == 8


def test_random_inputs_roundtrip_lengths() -> None:
    for n in (1, 7, 31, 32, 33, 100):
        data = os.urandom(n)
        assert 0 <= xxhash64(data) < 2**64
