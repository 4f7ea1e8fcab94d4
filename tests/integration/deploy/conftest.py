"""Build every kustomization under manifests/ once per session, with a real kubectl.

kubectl (with kustomize v5 built in) is installed by scripts/ensure-kubectl, which
`make test` and .ci/run call. In CI (CI=true) a missing kubectl fails these tests;
elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
MANIFESTS = REPO / "manifests"
KUSTOMIZATIONS = ("base", "overlays/enforce", "overlays/dcgm-exporter", "install")

Obj = dict[str, Any]


def find_kubectl() -> tuple[str | None, str]:
    """(path, why not) of a kubectl whose built-in kustomize is v5 or later."""
    candidates = [shutil.which("kubectl"), str(Path(sys.executable).parent / "kubectl")]
    found = [c for c in candidates if c and Path(c).is_file()]
    for path in found:
        result = subprocess.run(
            [path, "version", "--client"], capture_output=True, text=True, check=False
        )
        if re.search(r"^Kustomize Version: v([5-9]|\d{2,})\.", result.stdout, re.M):
            return path, ""
    if found:
        return None, f"{', '.join(found)}: kustomize older than v5 (run scripts/ensure-kubectl)"
    return None, "kubectl not found on PATH or in the venv (run scripts/ensure-kubectl)"


def require_tool(found: str | None, why: str) -> str:
    """The tool, or fail in CI (a missing tool must not pass silently there), else skip."""
    if found is not None:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def kubectl() -> str:
    return require_tool(*find_kubectl())


def kustomize_build(kubectl: str, directory: Path) -> list[Obj]:
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@dataclass(frozen=True)
class Build:
    name: str
    objects: list[Obj]

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str) -> Obj:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.name}: expected one {kind} {name}, found {len(found)}"
        return found[0]

    def configmap(self, prefix: str) -> Obj:
        """A generated ConfigMap by its name before the hash suffix."""
        found = [
            o
            for o in self.of_kind("ConfigMap")
            if re.fullmatch(rf"{re.escape(prefix)}(-[a-z0-9]{{10}})?", o["metadata"]["name"])
        ]
        assert len(found) == 1, f"{self.name}: expected one ConfigMap {prefix}-*"
        return found[0]

    def containers(self) -> Iterator[tuple[Obj, Obj]]:
        """(workload, container) for every container, init containers included."""
        for obj in self.objects:
            spec = (obj.get("spec") or {}).get("template", {}).get("spec")
            if spec is None:
                continue
            for container in [*spec.get("initContainers", []), *spec["containers"]]:
                yield obj, container


@pytest.fixture(scope="session")
def builds(kubectl: str) -> dict[str, Build]:
    return {
        name: Build(name, kustomize_build(kubectl, MANIFESTS / name)) for name in KUSTOMIZATIONS
    }
