"""An RGB raster with the few drawing operations the charts use; everything is clipped.

Drawing outside the image (or outside the clip rectangle set by ``clipped``) is dropped
rather than raising: a chart's series may run past its plot area, and clipping here keeps
the callers free of bounds checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from guardian.engine.picture.font import ADVANCE, WIDTH, glyph
from guardian.engine.picture.png import encode_png

Colour = tuple[int, int, int]


class Canvas:
    """``width`` x ``height`` pixels filled with ``background``; (0, 0) is the top left."""

    def __init__(self, width: int, height: int, background: Colour = (255, 255, 255)) -> None:
        if width <= 0 or height <= 0:
            raise ValueError(f"canvas must be at least 1x1, got {width}x{height}")
        self.width, self.height = width, height
        self._px = bytearray(bytes(background) * (width * height))
        self._clip = (0, 0, width - 1, height - 1)  # inclusive: left, top, right, bottom

    @contextmanager
    def clipped(self, left: int, top: int, right: int, bottom: int) -> Iterator[None]:
        """Within the block, draw only inside the rectangle (inclusive, and inside the image)."""
        saved = self._clip
        self._clip = (
            max(left, 0),
            max(top, 0),
            min(right, self.width - 1),
            min(bottom, self.height - 1),
        )
        try:
            yield
        finally:
            self._clip = saved

    def pixel(self, x: int, y: int) -> Colour:
        i = (y * self.width + x) * 3
        return self._px[i], self._px[i + 1], self._px[i + 2]

    def set(self, x: int, y: int, colour: Colour) -> None:
        left, top, right, bottom = self._clip
        if left <= x <= right and top <= y <= bottom:
            i = (y * self.width + x) * 3
            self._px[i : i + 3] = bytes(colour)

    def hline(self, x0: int, x1: int, y: int, colour: Colour) -> None:
        """The row ``y`` from ``x0`` to ``x1``, both ends included."""
        left, top, right, bottom = self._clip
        x0, x1 = max(min(x0, x1), left), min(max(x0, x1), right)
        if top <= y <= bottom and x0 <= x1:
            i = (y * self.width + x0) * 3
            self._px[i : i + (x1 - x0 + 1) * 3] = bytes(colour) * (x1 - x0 + 1)

    def vline(self, x: int, y0: int, y1: int, colour: Colour) -> None:
        """The column ``x`` from ``y0`` to ``y1``, both ends included."""
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.set(x, y, colour)

    def rect(self, x0: int, y0: int, x1: int, y1: int, colour: Colour) -> None:
        """A filled rectangle between two corners, both included."""
        for y in range(min(y0, y1), max(y0, y1) + 1):
            self.hline(x0, x1, y, colour)

    def line(self, x0: int, y0: int, x1: int, y1: int, colour: Colour, thickness: int = 1) -> None:
        """Bresenham's line; a thicker one stamps a ``thickness``-pixel square at each step."""
        if not 1 <= thickness <= 3:
            raise ValueError(f"thickness must be 1 to 3, got {thickness}")
        lo = -(thickness // 2)  # a 2-px line grows up and left, clear of the axes
        offsets = range(lo, lo + thickness)
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for oy in offsets:
                self.hline(x0 + lo, x0 + lo + thickness - 1, y0 + oy, colour)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def dashed_hline(
        self, x0: int, x1: int, y: int, colour: Colour, dash: int = 6, gap: int = 4
    ) -> None:
        """Row ``y`` from ``x0`` to ``x1`` as dashes; the pattern starts with a dash at ``x0``."""
        for start in range(min(x0, x1), max(x0, x1) + 1, dash + gap):
            self.hline(start, min(start + dash - 1, max(x0, x1)), y, colour)

    def text(self, x: int, y: int, s: str, colour: Colour, scale: int = 1) -> None:
        """``s`` in the 5x7 font with its top-left corner at (x, y), each dot ``scale`` px."""
        for n, char in enumerate(s):
            left = x + n * ADVANCE * scale
            for row, bits in enumerate(glyph(char)):
                for col in range(WIDTH):
                    if bits & (1 << (WIDTH - 1 - col)):
                        top = y + row * scale
                        px = left + col * scale
                        self.rect(px, top, px + scale - 1, top + scale - 1, colour)

    def to_png(self) -> bytes:
        return encode_png(self.width, self.height, self._px)
