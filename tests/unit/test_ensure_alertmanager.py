"""scripts/ensure-alertmanager fails clearly when it cannot provide Alertmanager and amtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-alertmanager"


def _sandbox_path(tmp_path: Path, apt_exit: int) -> str:
    """A PATH with bash and coreutils but no Alertmanager, and an apt-get that exits
    ``apt_exit``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "id", "head"):
        real = shutil.which(tool)
        assert real is not None
        (bindir / tool).symlink_to(real)
    apt = bindir / "apt-get"
    apt.write_text(f'#!{shutil.which("bash")}\necho "fake apt-get $*"\nexit {apt_exit}\n')
    apt.chmod(0o755)
    return str(bindir)


@pytest.mark.parametrize(
    ("apt_exit", "message"),
    [
        (100, "apt-get could not install Debian's 'prometheus-alertmanager' package"),
        (0, "installed the package but prometheus-alertmanager/amtool are still not on PATH"),
    ],
)
def test_fails_when_alertmanager_cannot_be_installed(
    tmp_path: Path, apt_exit: int, message: str
) -> None:
    result = subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT)],
        env={"PATH": _sandbox_path(tmp_path, apt_exit)},
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode != 0
    assert "installing Debian's 'prometheus-alertmanager' package" in result.stdout
    assert "fake apt-get install -y --no-install-recommends prometheus-alertmanager" in (
        result.stdout
    )
    assert message in result.stderr


def test_only_amtool_missing_still_installs(tmp_path: Path) -> None:
    """Both binaries are needed: the tests check configs with amtool."""
    path = _sandbox_path(tmp_path, 100)
    fake = Path(path) / "prometheus-alertmanager"
    fake.write_text(f'#!{shutil.which("bash")}\necho "alertmanager, version 0.25.0"\n')
    fake.chmod(0o755)
    result = subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT)],
        env={"PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "prometheus-alertmanager/amtool missing" in result.stdout


def test_reports_found_binaries_without_installing() -> None:
    if shutil.which("prometheus-alertmanager") is None or shutil.which("amtool") is None:
        pytest.fail("Alertmanager must be installed for the test suite (make test installs it)")
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("ensure-alertmanager: found alertmanager, version 0.")
