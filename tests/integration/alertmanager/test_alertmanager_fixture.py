"""The real-Alertmanager launcher and fixture: a free port, its own storage, a restart on
the same port that keeps silences, always stopped, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests

from testbed.alertmanager_server import (
    AlertmanagerBinaries,
    AlertmanagerNotInstalledError,
    AlertmanagerStartError,
    AmtoolError,
    LocalAlertmanager,
    check_config,
    start_alertmanager,
)
from tests.helpers import pid_alive
from tests.plugins.alertmanager_fixture import AlertmanagerFactory

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_handle_restart_and_stop(alertmanager: AlertmanagerFactory) -> None:
    am = alertmanager()
    assert am.url == f"http://127.0.0.1:{am.port}"
    assert requests.get(f"{am.url}/api/v2/status", timeout=5).json()["versionInfo"]["version"]
    silence = am.amtool("silence", "add", "alertname=X", "-d", "1h", "-c", "c").strip()
    old_pid = am.pid
    am.restart()
    assert am.pid != old_pid
    assert not pid_alive(old_pid)
    assert silence in am.amtool("silence", "query", "-q")  # storage kept
    am.stop()
    assert not pid_alive(am.pid)
    am.stop()  # idempotent


def test_context_manager_stops_on_exception(
    alertmanager_binaries: AlertmanagerBinaries, tmp_path: Path
) -> None:
    started: list[LocalAlertmanager] = []

    def run() -> None:
        with start_alertmanager(tmp_path, binaries=alertmanager_binaries) as am:
            started.append(am)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run()
    assert not pid_alive(started[0].pid)


def test_invalid_config_fails_clearly(
    alertmanager_binaries: AlertmanagerBinaries, tmp_path: Path
) -> None:
    with pytest.raises(AlertmanagerStartError, match="exited with"):
        start_alertmanager(tmp_path, "route: {receiver: nowhere}\n", binaries=alertmanager_binaries)
    bad = tmp_path / "bad.yml"
    bad.write_text("route: {receiver: nowhere}\n", encoding="utf-8")
    with pytest.raises(AmtoolError, match="nowhere"):
        check_config(bad, alertmanager_binaries)


def test_missing_binaries_are_named() -> None:
    with pytest.raises(AlertmanagerNotInstalledError, match="alertmanager and amtool not found"):
        AlertmanagerBinaries.find(search_path="/nonexistent")


def test_failing_test_in_another_session_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(
        textwrap.dedent(
            f"""\
            from pathlib import Path

            def test_fails_while_alertmanager_runs(alertmanager):
                am = alertmanager()
                Path({str(pid_file)!r}).write_text(str(am.pid))
                assert False, "deliberate failure"
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.plugins.alertmanager_fixture",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-q",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "deliberate failure" in result.stdout
    assert not pid_alive(int(pid_file.read_text()))
