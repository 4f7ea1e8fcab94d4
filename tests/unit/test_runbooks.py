"""Every shipped alert has a runbook page, and its link in Slack reaches that page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from guardian.app.settings.slack import SlackSettings
from guardian.engine.notify.findings import SHIPPED_RUNBOOKS, runbook_link
from guardian.engine.rules.loader import parse_rule_file
from guardian.engine.rules.render import RenderOptions, render
from guardian.model.runbooks import REPOSITORY_RUNBOOKS, RUNBOOK_URL_PATTERN

ROOT = Path(__file__).resolve().parents[2]
PACKS = sorted([*ROOT.glob("rules/guardian/*.yaml"), *ROOT.glob("rules/dcgm/*.yaml")])
RUNBOOKS = ROOT / "docs/runbooks"
SECTIONS = ("## What it means", "## How to check it", "## What to do", "## How to silence it")


def _alerts() -> dict[str, set[str]]:
    """Alert name -> every runbook_url its rules carry."""
    found: dict[str, set[str]] = {}
    for pack in PACKS:
        for group in yaml.safe_load(pack.read_text(encoding="utf-8"))["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    url = (rule.get("annotations") or {}).get("runbook_url", "")
                    found.setdefault(rule["alert"], set()).add(url)
    return found


ALERTS = _alerts()


def test_the_packs_were_found() -> None:
    assert len(PACKS) >= 8
    assert {"GpuIdle", "GpuExporterDown"} <= set(ALERTS)


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_every_shipped_alert_has_a_runbook_page_its_link_reaches(alert: str) -> None:
    page = RUNBOOKS / f"{alert.lower()}.md"
    assert page.is_file(), f"{alert} has no runbook: add {page.relative_to(ROOT)}"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {alert}\n")
    for section in SECTIONS:
        assert section in text, f"{page.name} lacks {section!r}"
    for url in ALERTS[alert]:
        assert url == f"{SHIPPED_RUNBOOKS}{alert.lower()}", f"{alert}: runbook_url {url!r}"
        link = runbook_link(url, alert, REPOSITORY_RUNBOOKS)
        assert link is not None
        assert link.endswith(f"/docs/runbooks/{alert.lower()}.md")


@pytest.mark.parametrize("alert", sorted(ALERTS))
def test_slack_links_the_rule_files_own_runbook_address_by_default(alert: str) -> None:
    """One runbook base: the rule files' annotation is what a Slack message links."""
    default = SlackSettings.model_fields["runbook_url_pattern"].default
    assert default == RUNBOOK_URL_PATTERN
    for url in ALERTS[alert]:
        assert runbook_link(url, alert, default) == url


def test_one_pattern_moves_the_rule_files_and_slack_alike() -> None:
    pattern = "https://wiki.example.com/gpu/{alertname_lower}"
    files = [parse_rule_file(p.read_text(encoding="utf-8"), p.name) for p in PACKS]
    rendered = yaml.safe_load(
        render(files, RenderOptions(format="rulefile", runbook_url_pattern=pattern))
    )
    annotations = {
        r["annotations"]["runbook_url"]
        for g in rendered["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    assert annotations == {pattern.format(alertname_lower=a.lower()) for a in ALERTS}
    for alert, urls in ALERTS.items():
        for url in urls:
            assert runbook_link(url, alert, pattern) == pattern.format(
                alertname_lower=alert.lower()
            )


def test_the_index_lists_every_page() -> None:
    index = (RUNBOOKS / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in RUNBOOKS.glob("*.md")} - {"README.md"}
    linked = set(re.findall(r"\]\(([a-z]+\.md)\)", index))
    assert pages == linked
    assert {f"{a.lower()}.md" for a in ALERTS} <= pages


def test_links_of_other_alerts_are_kept() -> None:
    assert runbook_link("https://wiki.example.com/x", "X", REPOSITORY_RUNBOOKS) == (
        "https://wiki.example.com/x"
    )
    assert runbook_link(f"{SHIPPED_RUNBOOKS}gpuidle", "GpuIdle", None) == (
        f"{SHIPPED_RUNBOOKS}gpuidle"
    )
    assert runbook_link(None, "GpuIdle", REPOSITORY_RUNBOOKS) is None
