"""The `prometheus` pytest fixture: start real Prometheus servers that are always stopped.

Usage::

    def test_x(prometheus):
        prom = prometheus(openmetrics=text, rule_files=[path])
        ...  # prom.url, prom.data_dir, prom.stop()

Every server started through the fixture is stopped at teardown, whether the
test passed or not. At the end of the session any server still running fails
the run, so a leak cannot go unnoticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from guardian.adapters.local_prometheus import (
    LocalPrometheus,
    PrometheusBinaries,
    PrometheusOptions,
    start_prometheus,
)

_STARTED = pytest.StashKey[list[LocalPrometheus]]()


class PrometheusFactory(Protocol):
    def __call__(self, **options: Any) -> LocalPrometheus: ...


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STARTED] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = [p for p in session.config.stash.get(_STARTED, []) if p.is_running()]
    for prom in leaked:
        prom.stop()
    if leaked:
        pids = ", ".join(str(p.pid) for p in leaked)
        session.config.get_terminal_writer().line(f"ERROR: Prometheus processes leaked: {pids}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def prometheus_binaries() -> PrometheusBinaries:
    # No skip: CI installs Prometheus, so its absence is a failure to report.
    return PrometheusBinaries.find()


@pytest.fixture
def prometheus(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    prometheus_binaries: PrometheusBinaries,
) -> Iterator[PrometheusFactory]:
    started: list[LocalPrometheus] = []
    registry = request.config.stash[_STARTED]

    def start(**options: Any) -> LocalPrometheus:
        workdir = tmp_path_factory.mktemp("prometheus")
        prom = start_prometheus(workdir, PrometheusOptions(**options), binaries=prometheus_binaries)
        started.append(prom)
        registry.append(prom)
        return prom

    try:
        yield start
    finally:
        for prom in started:
            prom.stop()
