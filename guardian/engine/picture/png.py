"""A minimal PNG codec: 8-bit RGB only, which is all the charts need.

The encoder writes filter 0 (none) on every row: the charts are flat colours, which zlib
compresses well without a filter. The decoder reads any of the five filters so that it is
an honest check of the pixels (tests decode what the encoder wrote), and refuses the rest.
"""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_RGB = 2  # PNG colour type: truecolour, no alpha
_BPP = 3  # bytes per pixel


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """PNG bytes for ``width`` x ``height`` pixels given row-major as R, G, B bytes."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image must be at least 1x1, got {width}x{height}")
    stride = width * _BPP
    if len(rgb) != stride * height:
        raise ValueError(f"expected {stride * height} bytes of RGB, got {len(rgb)}")
    raw = bytearray()
    view = memoryview(rgb)
    for row in range(height):
        raw.append(0)
        raw += view[row * stride : (row + 1) * stride]
    header = struct.pack(">IIBBBBB", width, height, 8, _RGB, 0, 0, 0)
    return b"".join(
        (
            SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(bytes(raw), 9)),
            _chunk(b"IEND", b""),
        )
    )


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG: bad signature")
    out: list[tuple[bytes, bytes]] = []
    pos = len(SIGNATURE)
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError("truncated chunk")
        (length,) = struct.unpack_from(">I", data, pos)
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            raise ValueError(f"truncated {kind!r} chunk")
        (crc,) = struct.unpack_from(">I", data, pos + 8 + length)
        if zlib.crc32(body, zlib.crc32(kind)) != crc:
            raise ValueError(f"CRC mismatch in {kind!r} chunk")
        out.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            return out
    raise ValueError("no IEND chunk")


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes | bytearray) -> None:
    """Undo one row's filter in place (``prior`` is the previous row, decoded)."""
    if kind == 0:
        return
    if kind > 4:
        raise ValueError(f"unknown filter type {kind}")
    for i in range(len(line)):
        a = line[i - _BPP] if i >= _BPP else 0
        b = prior[i]
        c = prior[i - _BPP] if i >= _BPP else 0
        if kind == 1:
            pred = a
        elif kind == 2:
            pred = b
        elif kind == 3:
            pred = (a + b) // 2
        else:
            pred = _paeth(a, b, c)
        line[i] = (line[i] + pred) & 0xFF


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, RGB bytes) of an 8-bit RGB, non-interlaced PNG; ValueError otherwise."""
    chunks = _chunks(data)
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise ValueError("first chunk is not a valid IHDR")
    width, height, depth, colour, compression, method, interlace = struct.unpack(
        ">IIBBBBB", chunks[0][1]
    )
    if (depth, colour, compression, method, interlace) != (8, _RGB, 0, 0, 0):
        raise ValueError(
            f"unsupported PNG: bit depth {depth}, colour type {colour}, "
            f"compression {compression}, filter method {method}, interlace {interlace}"
        )
    if width == 0 or height == 0:
        raise ValueError("empty image")
    try:
        raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    except zlib.error as exc:
        raise ValueError(f"bad image data: {exc}") from exc
    stride = width * _BPP
    if len(raw) != (stride + 1) * height:
        raise ValueError(f"image data is {len(raw)} bytes, expected {(stride + 1) * height}")
    out = bytearray()
    prior: bytes | bytearray = bytes(stride)
    for row in range(height):
        start = row * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prior)
        out += line
        prior = line
    return width, height, bytes(out)
