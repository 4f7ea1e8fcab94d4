"""The `alertmanager` pytest fixture: start real Alertmanagers that are always stopped.

Usage::

    def test_x(alertmanager):
        am = alertmanager()                  # the null-receiver config
        am = alertmanager(config=yaml_text)  # a config of the test's own
        ...  # am.url, am.amtool("silence", "add", ...), am.restart(), am.stop()

Every server started through the fixture is stopped at teardown, whether the test passed
or not; one still running at the end of the session fails the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from testbed.alertmanager_server import (
    AlertmanagerBinaries,
    LocalAlertmanager,
    start_alertmanager,
)

_STARTED = pytest.StashKey[list[LocalAlertmanager]]()


class AlertmanagerFactory(Protocol):
    def __call__(self, **options: Any) -> LocalAlertmanager: ...


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STARTED] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = [a for a in session.config.stash.get(_STARTED, []) if a.is_running()]
    for am in leaked:
        am.stop()
    if leaked:
        pids = ", ".join(str(a.pid) for a in leaked)
        session.config.get_terminal_writer().line(f"ERROR: Alertmanager processes leaked: {pids}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def alertmanager_binaries() -> AlertmanagerBinaries:
    # No skip: CI installs Alertmanager, so its absence is a failure to report.
    return AlertmanagerBinaries.find()


@pytest.fixture
def alertmanager(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    alertmanager_binaries: AlertmanagerBinaries,
) -> Iterator[AlertmanagerFactory]:
    started: list[LocalAlertmanager] = []
    registry = request.config.stash[_STARTED]

    def start(**options: Any) -> LocalAlertmanager:
        workdir = tmp_path_factory.mktemp("alertmanager")
        am = start_alertmanager(workdir, binaries=alertmanager_binaries, **options)
        started.append(am)
        registry.append(am)
        return am

    try:
        yield start
    finally:
        for am in started:
            am.stop()
