"""The image `make image` built is the one the Dockerfile describes, so that a Docker
build of the same file (on the pinned debian:bookworm-slim, pip from the index) gives the
same layout: the same files where the Dockerfile puts them, the same user, entry points,
environment, labels and health check, the same Python from Debian, and exactly the
project's runtime dependencies at the versions of requirements/constraints.txt.
"""

from __future__ import annotations

import re
import shlex
import stat
from email.parser import HeaderParser
from importlib import metadata

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.unit.deploy.dockerfile import Instruction, final_stage

from .conftest import REPO, Image

pytestmark = pytest.mark.e2e

SITE = "opt/gpu-guardian/lib/python3.11/site-packages"


def _last(stage: list[Instruction], keyword: str) -> Instruction:
    return [ins for ins in stage if ins.keyword == keyword][-1]


def test_user_entry_points_and_health_check_are_the_dockerfiles(image: Image) -> None:
    stage = final_stage()
    assert image.config["User"] == _last(stage, "USER").args
    assert image.config["Entrypoint"] == yaml.safe_load(_last(stage, "ENTRYPOINT").args)
    assert image.config["Cmd"] == yaml.safe_load(_last(stage, "CMD").args)
    health = _last(stage, "HEALTHCHECK").args
    test = yaml.safe_load(health[health.index("CMD") + 3 :].strip())
    assert image.config["Healthcheck"]["Test"] == ["CMD", *test]


def test_environment_and_labels_are_the_dockerfiles(image: Image) -> None:
    stage = final_stage()
    env = dict(item.split("=", 1) for item in image.env)
    for ins in stage:
        if ins.keyword == "ENV":
            for word in shlex.split(ins.args):
                name, _, value = word.partition("=")
                assert env[name] == value
    labels = image.config["Labels"]
    declared = re.findall(r"([\w.]+)=", " ".join(i.args for i in stage if i.keyword == "LABEL"))
    assert set(declared) <= set(labels)
    assert labels["org.opencontainers.image.version"] == image.record["version"]


def test_the_copied_files_are_the_repositorys(image: Image) -> None:
    rules = image.root / "usr/share/gpu-guardian/rules"
    shipped = {p.relative_to(REPO / "rules") for p in (REPO / "rules").rglob("*") if p.is_file()}
    inside = {p.relative_to(rules) for p in rules.rglob("*") if p.is_file()}
    stale = "the image is older than the repository (make image builds it again)"
    assert inside == shipped, stale
    for rel in shipped:
        assert (rules / rel).read_bytes() == (REPO / "rules" / rel).read_bytes(), stale
    check = image.root / "usr/local/bin/gpu-guardian-healthcheck"
    assert check.read_bytes() == (REPO / "image/gpu-guardian-healthcheck").read_bytes()
    assert stat.S_IMODE(check.stat().st_mode) == 0o755


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO / "requirements/constraints.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _runtime_closure() -> set[str]:
    """Every distribution `pip install .` brings, by the installed metadata's requirements
    (markers for Linux and Python 3.11; no extras)."""
    env = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11"}
    seen: set[str] = set()
    todo = ["gpu-guardian"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
                todo.append(req.name)
    return seen


def _installed(image: Image) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in (image.root / SITE).glob("*.dist-info/METADATA"):
        headers = HeaderParser().parsestr(meta.read_text(encoding="utf-8"))
        found[canonicalize_name(headers["Name"])] = headers["Version"]
    return found


def test_exactly_the_runtime_dependencies_at_the_pinned_versions(image: Image) -> None:
    installed = _installed(image)
    assert set(installed) == _runtime_closure()
    pins = _constraints()
    for name, version in installed.items():
        if name != "gpu-guardian":
            assert pins.get(name) == version, f"{name} {version}: pinned {pins.get(name)}"
    assert installed["gpu-guardian"] == image.record["version"]
    # Two console scripts, from the Dockerfile's one install.
    scripts = {p.name for p in (image.root / "opt/gpu-guardian/bin").iterdir()}
    assert {"guardian", "guardian-exporter"} <= scripts
    assert not {"pip", "pip3"} & scripts


def test_python_and_packages_come_from_debian(image: Image) -> None:
    status = (image.root / "var/lib/dpkg/status").read_text(encoding="utf-8")
    packages = set(re.findall(r"^Package: (\S+)$", status, re.M))
    python = re.search(r"^Package: python3\.11\n(?:.+\n)*?Version: (\S+)", status, re.M)
    assert python is not None
    assert python.group(1).startswith("3.11.")
    assert {"python3", "python3.11", "ca-certificates"} <= packages
    assert not {"python3-venv", "python3-pip", "gcc", "gcc-12", "cpp", "make"} & packages
    assert (
        (image.root / "opt/gpu-guardian/bin/python")
        .resolve(strict=False)
        .name.startswith("python3")
    )
    cfg = (image.root / "opt/gpu-guardian/pyvenv.cfg").read_text(encoding="utf-8")
    assert "home = /usr/bin" in cfg


def test_the_documented_size_is_the_built_size(image: Image) -> None:
    """docs/deploy.md's table states the size; a change of more than 10 % must update it."""
    docs = (REPO / "docs/deploy.md").read_text(encoding="utf-8")
    documented = re.search(r"\| \*\*the image\*\* \| \*\*(\d+) MB\*\* \|", docs)
    assert documented is not None, "docs/deploy.md: no size row for the image"
    size_mb = image.record["size"] / 1e6
    assert abs(size_mb - int(documented.group(1))) <= 0.1 * size_mb, (
        f"the image is {size_mb:.0f} MB; docs/deploy.md says {documented.group(1)} MB"
    )
