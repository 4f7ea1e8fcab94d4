"""The HTML report opens in a real headless Chromium (Debian's package) and its plots render.

The report is written by the command against the backfilled fleet, opened from a
``file://`` URL with networking off (it must need nothing else), and checked twice: the
DOM after its scripts ran has plotly's SVG plots with a trace per group (the series
names in their legends), and the screenshot is not blank.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.integration.report.conftest import config
from tests.integration.report.test_report_fleet import SINCE, UNTIL

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1280,1600",
    "--virtual-time-budget=10000",
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium must be installed for the test suite (scripts/ensure-chromium)")
    profile = tmp_path / "chromium-profile"
    return subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8
    assert color in (2, 6)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r[i : i + 3]) for r in rows for i in range(0, stride, bpp)]


def test_the_html_report_renders_its_plots_in_chromium(fleet_prometheus, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    cfg = config(tmp_path / "guardian.yaml", fleet_prometheus.url)
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "guardian",
            "report",
            "--config",
            str(cfg),
            "--since",
            str(SINCE),
            "--until",
            str(UNTIL),
            "--format",
            "html",
            "--output",
            str(out),
            "--progress",
            "none",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", html), "the report must not load scripts"
    assert "cdn" not in html.lower().split("plotly.js")[0]

    dom = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # plotly drew the three plots as SVG, with one legend entry per group.
    assert len(re.findall(r'<svg class="main-svg"', dom.stdout)) >= 6
    for plot in ("idle-gpu-hours", "cost", "idle-split"):
        assert f'id="{plot}"' in dom.stdout
    legend = re.findall(r'<text class="legendtext"[^>]*>([^<]+)</text>', dom.stdout)
    assert {"team-a", "team-b", "team-c", "total cost"} <= set(legend)
    assert {"in fully idle workloads", "in partly idle workloads"} <= set(legend)
    assert "<th>fully idle</th><th>partly idle</th>" in dom.stdout
    assert len(re.findall(r'class="point"', dom.stdout)) >= 2 * 21  # bars: one per day and group

    shot = tmp_path / "report.png"
    taken = chromium(tmp_path, f"--screenshot={shot}", out.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 1600)
    colours = set(pixels)
    non_white = sum(1 for p in pixels if p != b"\xff\xff\xff")
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    assert non_white > width * height // 50
