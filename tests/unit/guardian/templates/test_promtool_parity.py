"""Byte-for-byte parity with the real Prometheus 2.42: ``promtool test rules`` expands every case.

This proves the recorded outputs in ``parity_expected.json`` (which the fast unit tests use) are
still what Prometheus produces, and compares the engine with promtool directly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.guardian.templates.parity_cases import load_parity_cases
from tests.unit.guardian.templates.promtool_harness import promtool_expand
from tests.unit.guardian.templates.test_parity import expand_like_promtool

pytestmark = pytest.mark.e2e


def test_engine_and_recordings_match_promtool(tmp_path: Path) -> None:
    recorded = load_parity_cases()
    by_value: dict[str, list[dict[str, str]]] = {}
    for case in recorded:
        by_value.setdefault(case["value"], []).append(case)
    mismatches = []
    for n, (value, cases) in enumerate(by_value.items()):
        workdir = tmp_path / f"v{n}"
        workdir.mkdir()
        from_promtool = promtool_expand(value, [c["template"] for c in cases], workdir)
        for case, real in zip(cases, from_promtool, strict=True):
            ours = expand_like_promtool(value, case["template"])
            if not real == ours == case["expected"]:
                mismatches.append((value, case["template"], real, ours, case["expected"]))
    assert mismatches == []
    assert len(recorded) > 250
