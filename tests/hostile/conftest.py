"""The ``run_cli`` fixture: CLI cases under the limits of runner.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hostile.harness import Outcome, Run, Runner


@pytest.fixture(scope="session")
def run_cli() -> Iterator[Run]:
    """``run_cli("guardian" | "exporter" | "node", argv)``: one case's outcome under the limits."""
    runners: dict[str, Runner] = {}

    def run(program: str, argv: list[str]) -> Outcome:
        if program not in runners:
            runners[program] = Runner(program)
        return runners[program].run(argv)

    yield run
    for runner in runners.values():
        runner.close()
