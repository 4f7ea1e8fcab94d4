"""The engine expands templates exactly as Prometheus 2.42 did (outputs recorded from promtool)."""

from __future__ import annotations

import pytest

from guardian.engine.templates import QuerySample, TemplateContext, parse_alert_template
from tests.unit.guardian.templates.parity_cases import CASES, QUERIES, VALUES, load_parity_cases
from tests.unit.guardian.templates.promtool_harness import ALERT, LABELS

RECORDED = load_parity_cases()


def fake_query(expr: str) -> list[QuerySample]:
    """What Prometheus answers for the PromQL used in the cases; a bad expression fails."""
    if expr not in QUERIES:
        raise ValueError("1:8: parse error: unclosed left parenthesis")
    return [QuerySample(labels, value) for labels, value in QUERIES[expr]]


def expand_like_promtool(value: str, template: str) -> str:
    ctx = TemplateContext(labels=LABELS, value=VALUES[value], query=fake_query)
    return parse_alert_template(template, ALERT).expand(ctx)


def test_recorded_cases_match_the_case_list() -> None:
    assert [(c["value"], c["template"]) for c in RECORDED] == CASES


@pytest.mark.parametrize(
    "case", RECORDED, ids=[f"{i}:{c['value']}:{c['template'][:40]}" for i, c in enumerate(RECORDED)]
)
def test_expansion_matches_prometheus(case: dict[str, str]) -> None:
    assert expand_like_promtool(case["value"], case["template"]) == case["expected"]
