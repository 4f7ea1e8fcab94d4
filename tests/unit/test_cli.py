"""Both entry points start and show help."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from guardian.cli import main as guardian_main


@pytest.mark.parametrize("script", ["guardian", "guardian-exporter"])
def test_console_scripts_show_help(script: str) -> None:
    path = shutil.which(script, path=str(__import__("pathlib").Path(sys.executable).parent))
    assert path is not None, f"{script} is not installed next to {sys.executable}"

    result = subprocess.run([path, "--help"], capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stderr
    assert f"usage: {script}" in result.stdout


def test_python_dash_m_guardian() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "guardian", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "rules" in result.stdout


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert guardian_main([]) == 2
    assert "usage: guardian" in capsys.readouterr().out
