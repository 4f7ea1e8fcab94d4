"""The parser and printer against what Prometheus 2.42 did with the same expressions.

``tests/fixtures/promql/printed.yaml`` was recorded from promtool and prometheus 2.42.0
(and is re-checked against them by tests/integration/engine/test_promql_oracle.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.engine.promql import PromQLError, parse_expr, printed

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "promql" / "printed.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
VALID = [c for c in CASES if "printed" in c]
INVALID = [c for c in CASES if "error" in c]


def test_the_recorded_cases_cover_both_verdicts() -> None:
    assert len(VALID) > 200
    assert len(INVALID) > 50


@pytest.mark.parametrize("case", VALID, ids=lambda c: repr(c["expr"]))
def test_prints_what_prometheus_evaluates(case: dict[str, Any]) -> None:
    assert printed(case["expr"]) == case["printed"]


@pytest.mark.parametrize("case", VALID, ids=lambda c: repr(c["expr"]))
def test_the_printed_form_is_a_fixpoint(case: dict[str, Any]) -> None:
    assert printed(case["printed"]) == case["printed"]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: repr(c["expr"]))
def test_refuses_what_prometheus_refuses(case: dict[str, Any]) -> None:
    with pytest.raises(PromQLError, match=r"^\d+:\d+: parse error: "):
        parse_expr(case["expr"])


def test_most_messages_are_word_for_word_prometheus() -> None:
    same = 0
    for case in INVALID:
        try:
            parse_expr(case["expr"])
        except PromQLError as exc:
            same += str(exc) == case["error"]
    assert same >= 0.85 * len(INVALID)
