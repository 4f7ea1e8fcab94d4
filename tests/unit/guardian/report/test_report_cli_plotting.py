"""`guardian report --format html` needs no plotting library: the image has none (plotly
is left out of it), and the page draws its charts as inline SVG."""

from __future__ import annotations

import sys

import pytest

from guardian.cli.report_cmd import renderer
from tests.unit.guardian.report.test_usage import RESULT


@pytest.fixture
def without_plotly(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "plotly"]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("guardian.app.report.html", "guardian.app.report.svg"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly: ModuleNotFoundError


@pytest.mark.usefixtures("without_plotly")
def test_every_format_renders_without_plotly() -> None:
    from guardian.app.report.html import render_html

    page = render_html(RESULT, "gpu_group")
    assert page.startswith("<!DOCTYPE html>")
    for fmt in ("table", "csv", "json", "html"):
        assert renderer(fmt, "gpu_group")(RESULT)
    assert not [m for m in sys.modules if m.split(".")[0] == "plotly" and sys.modules[m]]
