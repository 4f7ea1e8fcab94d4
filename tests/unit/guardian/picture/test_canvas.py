"""The raster and the 5x7 font the charts are drawn with."""

from __future__ import annotations

import pytest

from guardian.engine.picture.canvas import Canvas
from guardian.engine.picture.font import BOX, GLYPHS, glyph, text_width
from guardian.engine.picture.png import decode_png

RED = (255, 0, 0)
WHITE = (255, 255, 255)


def _painted(canvas: Canvas, colour: tuple[int, int, int] = RED) -> set[tuple[int, int]]:
    return {
        (x, y)
        for y in range(canvas.height)
        for x in range(canvas.width)
        if canvas.pixel(x, y) == colour
    }


def test_font_covers_printable_ascii_with_five_by_seven_glyphs() -> None:
    assert set(GLYPHS) == {chr(c) for c in range(32, 127)}
    for char, rows in GLYPHS.items():
        assert len(rows) == 7, char
        assert all(0 <= r < 32 for r in rows), char
        assert (char == " ") == (not any(rows)), char
    assert glyph("é") == BOX


def test_text_width() -> None:
    assert text_width("") == 0
    assert text_width("a") == 5
    assert text_width("ab") == 11
    assert text_width("ab", scale=2) == 22


def test_text_draws_glyphs_and_a_box_for_unknown_characters() -> None:
    canvas = Canvas(20, 9, WHITE)
    canvas.text(1, 1, "\u2603", RED)
    box = {(1 + c, 1 + r) for r in range(7) for c in range(5) if BOX[r] & (0x10 >> c)}
    assert _painted(canvas) == box
    big = Canvas(20, 20, WHITE)
    big.text(0, 0, "I", RED, scale=2)
    assert len(_painted(big)) == 4 * sum(bin(r).count("1") for r in GLYPHS["I"])


def test_lines_are_clipped_not_refused() -> None:
    canvas = Canvas(10, 10, WHITE)
    canvas.line(-5, -5, 20, 20, RED)
    assert _painted(canvas) == {(i, i) for i in range(10)}
    canvas.hline(-3, 30, 12, RED)
    canvas.set(10, 0, RED)
    assert len(_painted(canvas)) == 10


@pytest.mark.parametrize("thickness", [1, 2, 3])
def test_line_thickness(thickness: int) -> None:
    canvas = Canvas(30, 10, WHITE)
    canvas.line(5, 5, 25, 5, RED, thickness=thickness)
    rows = {y for _, y in _painted(canvas)}
    assert len(rows) == thickness
    assert 5 in rows


def test_line_refuses_a_thickness_out_of_range() -> None:
    with pytest.raises(ValueError, match="thickness"):
        Canvas(5, 5).line(0, 0, 4, 4, RED, thickness=4)


def test_steep_line_is_connected() -> None:
    canvas = Canvas(10, 30, WHITE)
    canvas.line(2, 1, 7, 28, RED)
    assert {y for _, y in _painted(canvas)} == set(range(1, 29))


def test_dashed_line_and_rect_and_clip() -> None:
    canvas = Canvas(25, 6, WHITE)
    canvas.dashed_hline(0, 24, 0, RED, dash=3, gap=2)
    assert sorted(x for x, _ in _painted(canvas)) == [x for x in range(25) if x % 5 < 3]
    with canvas.clipped(2, 2, 4, 4):
        canvas.rect(0, 0, 24, 5, (0, 0, 255))
    assert len(_painted(canvas, (0, 0, 255))) == 9


def test_to_png_decodes_to_the_pixels() -> None:
    canvas = Canvas(4, 3, (1, 2, 3))
    canvas.set(3, 2, RED)
    width, height, rgb = decode_png(canvas.to_png())
    assert (width, height) == (4, 3)
    assert rgb == bytes((1, 2, 3)) * 11 + bytes(RED)
