"""Load a fleet into Prometheus: remote write into the head (default), or promtool blocks.

Remote write: the fleet is sent in time chunks (all series' samples of 15 minutes, then
the next 15), so every sample stays inside the head's appendable window (newest minus
1h) and each series' samples arrive in order. The ``WriteRequest`` protobuf is encoded
here by hand: a constant segment's samples differ only in their timestamp, so they are
one ``bytes.join`` (the generated protobuf classes would spend a microsecond a sample).

promtool (``--load promtool``): OpenMetrics text per time chunk, one
``create-blocks-from openmetrics`` run each, into the data directory before the start.
It reads about 115k samples a second here, so it is only practical at 2,000 GPUs.
"""

from __future__ import annotations

import re
import struct
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import cramjam
import requests
from fleet_core import CONST, COUNTER, Fleet, Segment, Series, Timeline, write_chunk

_LABEL = re.compile(r'(\w+)="([^"]*)"')
_BATCH_BYTES = 8 << 20
_SAMPLE_HEAD = b"\x12\x10\x09"  # Sample (field 2, 16 bytes): value (field 1, double) ...
_TS_TAG = b"\x10"  # ... timestamp (field 2, varint; 6 bytes for milliseconds since 2004)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string_field(tag: int, text: str) -> bytes:
    raw = text.encode()
    return bytes([tag]) + _varint(len(raw)) + raw


def _labels_wire(series: Series) -> bytes:
    pairs = sorted([("__name__", series.name), *_LABEL.findall(series.labels)])
    out = b""
    for name, value in pairs:
        label = _string_field(0x0A, name) + _string_field(0x12, value)
        out += b"\x0a" + _varint(len(label)) + label
    return out


def _samples_wire(seg: Segment, lo: int, hi: int, clock: Sequence[bytes]) -> bytes:
    s, e = max(seg.start, lo), min(seg.end, hi)
    if s >= e:
        return b""
    pack = struct.Struct("<d").pack
    if seg.kind == CONST:
        head = _SAMPLE_HEAD + pack(float(seg.value)) + _TS_TAG
        return head + head.join(clock[s:e])
    if seg.kind == COUNTER:
        b, k, s0 = seg.base, seg.per_step, seg.start
        return b"".join(
            [
                _SAMPLE_HEAD + pack(round(b + k * (i - s0), 3)) + _TS_TAG + clock[i]
                for i in range(s, e)
            ]
        )
    values = [pack(float(v)) for v in seg.pattern]
    n = len(values)
    return b"".join([_SAMPLE_HEAD + values[i % n] + _TS_TAG + clock[i] for i in range(s, e)])


def _ms_clocks(t: Timeline) -> list[list[bytes]]:
    width = min(t.offsets, t.step)
    return [
        [_varint((t.start + i * t.step + o) * 1000) for i in range(t.steps)] for o in range(width)
    ]


def remote_write(fleet: Fleet, t: Timeline, url: str, chunk_steps: int) -> int:
    """Send every sample; returns the number of requests."""
    clocks = _ms_clocks(t)
    wire: dict[int, bytes] = {}
    session = requests.Session()
    headers = {
        "Content-Encoding": "snappy",
        "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0",
    }

    def post(body: bytes) -> None:
        data = bytes(cramjam.snappy.compress_raw(body))
        response = session.post(f"{url}/api/v1/write", data=data, headers=headers, timeout=300)
        if response.status_code >= 300:
            raise RuntimeError(f"remote write: HTTP {response.status_code}: {response.text[:300]}")

    requests_sent = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: list[Future[None]] = []
        for lo in range(0, t.steps, chunk_steps):
            hi = min(t.steps, lo + chunk_steps)
            batch: list[bytes] = []
            size = 0
            for family in fleet.ordered():
                for series in family:
                    samples = b"".join(
                        [
                            _samples_wire(seg, lo, hi, clocks[series.clock])
                            for seg in series.segments
                        ]
                    )
                    if not samples:
                        continue
                    key = id(series)
                    labels = wire.get(key)
                    if labels is None:
                        labels = wire[key] = _labels_wire(series)
                    body = labels + samples
                    batch.append(b"\x0a" + _varint(len(body)) + body)
                    size += len(body)
                    if size >= _BATCH_BYTES:
                        pending.append(pool.submit(post, b"".join(batch)))
                        requests_sent += 1
                        batch, size = [], 0
                        while len(pending) > 3:
                            pending.pop(0).result()
            if batch:
                pending.append(pool.submit(post, b"".join(batch)))
                requests_sent += 1
            # The next chunk's samples must not overtake this one's in the head.
            for future in pending:
                future.result()
            pending.clear()
    return requests_sent


def promtool_blocks(fleet: Fleet, t: Timeline, data_dir: Path, chunk_steps: int) -> None:
    """Backfill with promtool, one time chunk at a time (a file each, removed after)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    clocks = t.clocks()
    with tempfile.TemporaryDirectory(prefix="pack-bench-om-") as tmp:
        for lo in range(0, t.steps, chunk_steps):
            path = Path(tmp) / f"chunk-{lo}.om"
            with path.open("w", encoding="utf-8") as out:
                write_chunk(out, fleet.ordered(), clocks, lo, min(t.steps, lo + chunk_steps))
            started = time.monotonic()
            subprocess.run(
                ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)],
                check=True,
                capture_output=True,
                timeout=3600,
            )
            print(f"  promtool: steps {lo}.. in {time.monotonic() - started:.0f}s", flush=True)
            path.unlink()
