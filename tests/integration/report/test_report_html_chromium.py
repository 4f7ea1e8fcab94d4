"""The HTML report opens in a real headless Chromium (Debian's package) and its charts render.

The report is written by the command against the backfilled fleet, opened from a
``file://`` URL with networking off (it must need nothing else), and checked twice: the
DOM after its scripts ran has the headline (whose figures are the CSV's totals), the four
SVG charts with a series per group (the names in their legends) and the per-workload
table, and the screenshot is not blank. The file is self-contained and under 1.5 MB.
"""

from __future__ import annotations

import csv
import io
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


COMMAND = (sys.executable, "-m", "guardian", "report", "--progress", "none")


def report(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "--config", str(cfg), "--since", str(SINCE), "--until", str(UNTIL), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def csv_totals(text: str) -> tuple[float, float, float, float]:
    """Idle cost, cost, idle and allocated GPU-hours: the CSV's columns summed."""
    rows = list(csv.DictReader(io.StringIO(text)))
    return (
        sum(float(r["idle_cost"]) for r in rows),
        sum(float(r["cost"]) for r in rows),
        sum(float(r["idle_gpu_hours"]) for r in rows),
        sum(float(r["allocated_gpu_hours"]) for r in rows),
    )


def headline_value(dom: str, key: str) -> str:
    found = re.search(rf'<div class="value" id="headline-{key}">([^<]+)</div>', dom)
    assert found, key
    return found.group(1)


def check_headline(dom: str, csv_text: str) -> None:
    idle_cost, cost, idle, allocated = csv_totals(csv_text)
    assert (round(idle_cost, 2), round(cost, 2)) == (4599.0, 5589.0)  # the fleet's, by hand
    assert headline_value(dom, "idle-cost") == f"€{idle_cost:,.2f}"
    assert headline_value(dom, "cost") == f"€{cost:,.2f}"
    assert headline_value(dom, "share-idle") == f"{idle_cost / cost:.1%}"
    assert headline_value(dom, "idle-hours") == f"{idle:,.1f} of {allocated:,.1f}"
    top = re.findall(r"<li><b>([^<]+)</b>: ([^ ]+) idle", dom)
    assert top == [
        ("research/StatefulSet/notebook", "€1,944.00"),
        ("serve/Deployment/web", "€1,845.00"),
        ("ml/Deployment/train", "€810.00"),
    ]
    assert dom.index('id="headline"') < dom.index("<svg")


CLICK = """<script>
var th = document.querySelectorAll("#workloads th");
th[7].click(); th[7].click();  /* share idle: descending, then ascending */
</script></body>"""


def check_sorting(tmp_path: Path, html: str) -> None:
    """A click on a column sorts the workloads by it (the page's own script, in Chromium)."""
    clicked = tmp_path / "clicked.html"
    clicked.write_text(html.replace("</body>", CLICK), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", clicked.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = dom.stdout[dom.stdout.index('<table id="workloads"') :].split("</tbody>")[0]
    assert re.findall(r"<tr><td>[^<]+</td><td>([^<]+)</td>", body) == [
        "Deployment/train",  # 66.7 % idle
        "Deployment/web",  # 75.9 %
        "StatefulSet/notebook",  # 100 %
    ]
    assert '<th data-dir="asc">share idle</th>' in dom.stdout


def test_the_html_report_renders_its_plots_in_chromium(fleet_prometheus, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    cfg = config(tmp_path / "guardian.yaml", fleet_prometheus.url)
    made = report(cfg, "--format", "html", "--output", str(out))
    assert made.returncode == 0, made.stderr
    as_csv = report(cfg, "--format", "csv")
    assert as_csv.returncode == 0, as_csv.stderr
    html = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 1_500_000
    assert not re.search(r"<script[^>]+src=", html), "the report must not load scripts"
    assert not re.search(r"https?://", html), "the report must open offline"

    dom = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    check_headline(dom.stdout, as_csv.stdout)
    # Four SVG charts; idle cost and all spend apart, one legend entry per group.
    assert len(re.findall(r'<svg class="main-svg"', dom.stdout)) == 4
    for plot in ("idle-cost", "spend", "idle-gpu-hours", "idle-split"):
        assert f'id="{plot}"' in dom.stdout
    legend = re.findall(r'<text class="legendtext"[^>]*>([^<]+)</text>', dom.stdout)
    assert legend.count("team-a") == legend.count("team-c") == 3
    assert {"in fully idle workloads", "in partly idle workloads"} <= set(legend)
    assert "total cost" not in legend
    assert "<th>fully idle</th><th>partly idle</th>" in dom.stdout
    assert len(re.findall(r'class="bar"', dom.stdout)) >= 2 * 21  # bars: one per day and group
    workloads = dom.stdout[dom.stdout.index('<table id="workloads"') :]
    names = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td>", workloads.split("</tbody>")[0])
    assert names == [
        ("research", "StatefulSet/notebook"),
        ("serve", "Deployment/web"),
        ("ml", "Deployment/train"),
    ]

    check_sorting(tmp_path, html)

    shot = tmp_path / "report.png"
    taken = chromium(tmp_path, f"--screenshot={shot}", out.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 1600)
    colours = set(pixels)
    non_white = sum(1 for p in pixels if p != b"\xff\xff\xff")
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    assert non_white > width * height // 50
