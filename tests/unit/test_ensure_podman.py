"""scripts/ensure-podman fails clearly when it cannot provide podman and mmdebstrap."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-podman"


def _sandbox_path(tmp_path: Path, apt_exit: int) -> str:
    """A PATH with bash and coreutils but no podman, and an apt-get that exits ``apt_exit``."""
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
        (100, "apt-get could not install Debian's 'podman' and 'mmdebstrap' packages"),
        (0, "installed the packages but podman/mmdebstrap are still not on PATH"),
    ],
)
def test_fails_when_podman_cannot_be_installed(tmp_path: Path, apt_exit: int, message: str) -> None:
    result = subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT)],
        env={"PATH": _sandbox_path(tmp_path, apt_exit)},
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode != 0
    assert "installing Debian's 'podman' and 'mmdebstrap' packages" in result.stdout
    assert "fake apt-get install -y --no-install-recommends podman mmdebstrap" in result.stdout
    assert message in result.stderr


def test_reports_found_podman_without_installing() -> None:
    if shutil.which("podman") is None or shutil.which("mmdebstrap") is None:
        pytest.skip("podman/mmdebstrap not installed (make test installs them where it can)")
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("ensure-podman: found podman version ")
    assert ", mmdebstrap " in result.stdout
