"""The PNG codec: what the encoder writes decodes to the same pixels; bad files are refused."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from guardian.engine.picture.png import SIGNATURE, decode_png, encode_png


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data)
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _png(width: int, height: int, idat: bytes, colour_type: int = 2) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _filtered(kind: int, row: bytes, prior: bytes) -> bytes:
    """The PNG spec's forward filter for one row of 3-byte pixels (independent of the codec)."""
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - 3] if i >= 3 else 0
        b = prior[i]
        c = prior[i - 3] if i >= 3 else 0
        pred = (0, a, b, (a + b) // 2, _paeth(a, b, c))[kind]
        out.append((x - pred) & 0xFF)
    return bytes(out)


def test_round_trip_of_a_random_image() -> None:
    rng = random.Random(7)  # noqa: S311 (test data)
    width, height = 37, 23
    rgb = rng.randbytes(width * height * 3)
    data = encode_png(width, height, rgb)
    assert data.startswith(SIGNATURE)
    assert decode_png(data) == (width, height, rgb)


def test_encoder_writes_ihdr_idat_iend_with_filter_zero_rows() -> None:
    data = encode_png(2, 2, bytes(range(12)))
    kinds = [data[8 + 4 : 8 + 8], data[33 + 4 : 33 + 8]]
    assert kinds == [b"IHDR", b"IDAT"]
    assert data.endswith(_chunk(b"IEND", b""))
    (length,) = struct.unpack_from(">I", data, 33)
    raw = zlib.decompress(data[41 : 41 + length])
    assert raw == b"\x00" + bytes(range(6)) + b"\x00" + bytes(range(6, 12))


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4])
def test_decoder_undoes_each_filter_type(kind: int) -> None:
    rng = random.Random(kind)  # noqa: S311 (test data)
    width, height = 5, 4
    rows = [rng.randbytes(width * 3) for _ in range(height)]
    raw = bytearray()
    prior = bytes(width * 3)
    for row in rows:
        raw += bytes([kind]) + _filtered(kind, row, prior)
        prior = row
    assert decode_png(_png(width, height, zlib.compress(bytes(raw)))) == (
        width,
        height,
        b"".join(rows),
    )


def test_decoder_handles_filters_mixed_row_by_row() -> None:
    rng = random.Random(11)  # noqa: S311 (test data)
    rows = [rng.randbytes(6 * 3) for _ in range(5)]
    raw = bytearray()
    prior = bytes(6 * 3)
    for kind, row in enumerate(rows):
        raw += bytes([kind]) + _filtered(kind, row, prior)
        prior = row
    assert decode_png(_png(6, 5, zlib.compress(bytes(raw))))[2] == b"".join(rows)


def test_decoder_rejects_a_flipped_crc_byte() -> None:
    data = bytearray(encode_png(3, 3, bytes(27)))
    data[8 + 8 + 13] ^= 0x01  # the first byte of IHDR's CRC
    with pytest.raises(ValueError, match="CRC"):
        decode_png(bytes(data))


def test_decoder_rejects_a_flipped_data_byte() -> None:
    data = bytearray(encode_png(3, 3, bytes(27)))
    data[41] ^= 0x80  # inside IDAT's data: its CRC no longer matches
    with pytest.raises(ValueError, match="CRC"):
        decode_png(bytes(data))


def test_decoder_rejects_a_wrong_signature() -> None:
    data = encode_png(3, 3, bytes(27))
    with pytest.raises(ValueError, match="signature"):
        decode_png(b"\x89PNG\r\n\x1a\x00" + data[8:])


def test_decoder_rejects_other_colour_types() -> None:
    grey = zlib.compress(b"\x00" + bytes(3))  # one row of 3 grey pixels
    with pytest.raises(ValueError, match="colour type 0"):
        decode_png(_png(3, 1, grey, colour_type=0))


def test_decoder_rejects_an_unknown_filter_and_short_data() -> None:
    with pytest.raises(ValueError, match="filter type 5"):
        decode_png(_png(1, 1, zlib.compress(b"\x05" + bytes(3))))
    with pytest.raises(ValueError, match="expected"):
        decode_png(_png(2, 2, zlib.compress(b"\x00" + bytes(6))))


def test_decoder_rejects_a_truncated_file() -> None:
    data = encode_png(3, 3, bytes(27))
    with pytest.raises(ValueError, match=r"truncated|IEND"):
        decode_png(data[:-6])


def test_encoder_checks_the_pixel_count() -> None:
    with pytest.raises(ValueError, match="expected 12 bytes"):
        encode_png(2, 2, bytes(11))
