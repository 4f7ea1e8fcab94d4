"""No function or constructor of the two programs (and guardian_common) takes more than 6
parameters or runs over 60 lines: pass a record, not ten fields; split a long decision.
Keyword-only parameters with defaults count like any other."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("guardian", "exporter", "guardian_common")
MAX_PARAMETERS = 6
MAX_LINES = 60


def _functions() -> list[tuple[str, int, int]]:
    """(where, parameters, lines) of every function; generated protobuf modules aside."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "_pb2" in path.name:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                args = node.args
                named = [
                    a
                    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                    if a.arg not in ("self", "cls")
                ]
                count = len(named) + (args.vararg is not None) + (args.kwarg is not None)
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                found.append((where, count, lines))
    return found


def test_no_function_takes_more_than_six_parameters() -> None:
    assert [(w, n) for w, n, _ in _functions() if n > MAX_PARAMETERS] == []


def test_no_function_is_longer_than_sixty_lines() -> None:
    assert [(w, n) for w, _, n in _functions() if n > MAX_LINES] == []


def test_the_scan_sees_the_programs() -> None:
    names = {w.split(" ")[1] for w, _, _ in _functions()}
    assert {"build_remediation", "evaluate_alerting_rule", "plan", "main"} <= names
