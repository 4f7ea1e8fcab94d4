"""Label-matcher regexps against promtool 2.42 itself (Go 1.19's regexp).

``promtool check rules`` judges ``x{a=~"<pattern>"}`` for each pattern of
``tests/fixtures/promql/regexps.json`` and for expressions at Go's nesting and size limits;
its verdict, word for word, must be the fixture's (which the fast unit tests use) and the
engine's (Go's regexp on RE2, guardian.engine.golang).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.engine.promql.regexps import regex_error

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "promql" / "regexps.json"
# At Go's limits: a parse tree 1000 high, 3.36M instructions (one side of each limit).
LIMITS = [
    "(" * 998 + "a" + ")" * 998,
    "(" * 999 + "a" + ")" * 999,
    "(?:(a)|b" * 499 + ")" * 499,
    "(?:(a)|b" * 500 + ")" * 500,
    "(?:a*" * 1200 + ")" * 1200,
    "x{1000}" * 3350,
    "x{1000}" * 3360,
    "x{1000}" * 3000 + "(?:ab){1000}" * 200,
]


def _promtool_verdicts(patterns: list[str], workdir: Path) -> list[str | None]:
    files = []
    for i, pattern in enumerate(patterns):
        expr = "x{a=~" + json.dumps(pattern) + "}"
        group = {"name": "g", "rules": [{"record": "r", "expr": expr}]}
        path = workdir / f"e{i}.yaml"
        path.write_text(json.dumps({"groups": [group]}), encoding="utf-8")
        files.append(path)
    result = subprocess.run(
        [PrometheusBinaries.find().promtool, "check", "rules", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    lines = result.stderr.splitlines()
    verdicts: list[str | None] = []
    for path in files:
        found = [line for line in lines if line.lstrip().startswith(f"{path}: ")]
        verdicts.append(found[0].split("parse error: ", 1)[1] if found else None)
    return verdicts


@pytest.mark.timeout(300)
def test_fixture_engine_and_promtool_agree(tmp_path: Path) -> None:
    cases: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    patterns = [c["pattern"] for c in cases]
    real = _promtool_verdicts(patterns, tmp_path)
    stale = [
        (c["pattern"], c["error"], r) for c, r in zip(cases, real, strict=True) if c["error"] != r
    ]
    assert stale == [], "the fixture's verdicts are stale"
    wrong = [
        (p, r, regex_error(p)) for p, r in zip(patterns, real, strict=True) if regex_error(p) != r
    ]
    assert wrong == []


@pytest.mark.timeout(300)
def test_gos_nesting_and_size_limits(tmp_path: Path) -> None:
    real = _promtool_verdicts(LIMITS, tmp_path)
    assert [v is None for v in real] == [True, False, True, False, True, True, False, False]
    assert [regex_error(p) for p in LIMITS] == real
