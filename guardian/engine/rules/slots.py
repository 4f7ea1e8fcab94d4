"""Fixed evaluation slots, as Prometheus's Group.EvalTimestamp (rules/group.go).

A group is evaluated at ``k * interval + offset`` where ``offset`` is the xxhash64 of
its label-set key ``{file, name}`` modulo the interval (in nanoseconds). Matching it
exactly keeps the engine's timestamps on the same slots Prometheus would use.
"""

from __future__ import annotations

import struct

_MASK = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261
_NS = 1_000_000_000


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK
    return (_rotl(acc, 31) * _P1) & _MASK


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _MASK


def xxhash64(data: bytes, seed: int = 0) -> int:
    """XXH64, as github.com/cespare/xxhash (seed 0) that Prometheus's labels.Hash uses."""
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _MASK
        v2 = (seed + _P2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - _P1) & _MASK
        while i + 32 <= n:
            a, b, c, d = struct.unpack_from("<4Q", data, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while i + 8 <= n:
        (k,) = struct.unpack_from("<Q", data, i)
        h ^= _round(0, k)
        h = (_rotl(h, 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h ^= (k * _P1) & _MASK
        h = (_rotl(h, 23) * _P2 + _P3) & _MASK
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _MASK
        h = (_rotl(h, 11) * _P1) & _MASK
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    h ^= h >> 32
    return h


def group_hash(file: str, name: str) -> int:
    """labels.Labels{file, name}.Hash(): name, 0xff, value, 0xff for each label, sorted."""
    data = b"".join(part.encode() + b"\xff" for part in ("file", file, "name", name))
    return xxhash64(data)


def slot_offset_ns(file: str, name: str, interval_seconds: float) -> int:
    interval_ns = round(interval_seconds * _NS)
    return group_hash(file, name) % interval_ns


def slot_at_or_before(now: float, file: str, name: str, interval_seconds: float) -> float:
    """The group's most recent slot timestamp at or before ``now`` (unix seconds)."""
    interval_ns = round(interval_seconds * _NS)
    offset = slot_offset_ns(file, name, interval_seconds)
    adjusted = round(now * _NS) - offset
    base = adjusted - adjusted % interval_ns
    # Milliseconds, truncated as Prometheus's timestamp.FromTime does: the time queried,
    # written with ALERTS and sent as startsAt (which is truncated to ms as well).
    return ((base + offset) // 1_000_000) / 1000.0


def next_slot_after(now: float, file: str, name: str, interval_seconds: float) -> float:
    slot = slot_at_or_before(now, file, name, interval_seconds)
    return slot + interval_seconds if slot <= now else slot
