"""The image `make image` built (scripts/build-image), mounted, and a way to run its
programs as a container runtime would, without one (running a container is not possible
on every machine that can build one: podman needs a cgroup setup it supports).

`make test` builds the image before pytest. Where podman and mmdebstrap cannot be
installed, scripts/build-image writes why to build/image/unavailable and these tests skip
with that reason; in CI (CI=true) they fail instead, as every missing tool does there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
BUILT = REPO / "build" / "image"
RUNNER = Path(__file__).with_name("run-in-image")


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {why}")
    pytest.skip(why)


def _podman(*args: str) -> list[str]:
    """A podman command, in podman's user namespace when not root (rootless storage)."""
    return ["podman", *args] if os.geteuid() == 0 else ["podman", "unshare", "podman", *args]


def _in_namespace(argv: Sequence[str]) -> list[str]:
    """``argv`` in a private mount namespace (as root, or in podman's user namespace)."""
    private = ["unshare", "--mount", "--propagation", "private", *argv]
    return private if os.geteuid() == 0 else ["podman", "unshare", *private]


@dataclass(frozen=True)
class Image:
    """The built image: its record (build/image/image.json), config and mounted root."""

    ref: str
    record: dict[str, Any]
    config: dict[str, Any]
    root: Path

    @property
    def user(self) -> str:
        return str(self.config["User"])

    @property
    def env(self) -> list[str]:
        return [str(e) for e in self.config.get("Env") or []]

    def argv(
        self, args: Sequence[str], *, binds: Mapping[str, str] = {}, env: Mapping[str, str] = {}
    ) -> list[str]:
        """The command line that runs ``args`` (after the image's entry point, as a pod's
        ``args:``; or starting with ``-`` + a program, as ``command:``) in the image."""
        entry = [str(a) for a in self.config.get("Entrypoint") or []]
        command = list(args[1:]) if args and args[0] == "-" else [*entry, *args]
        flags: list[str] = []
        for src, dst in binds.items():
            flags += ["--bind", f"{src}:{dst}"]
        for item in [*self.env, "HOME=/tmp", *(f"{k}={v}" for k, v in env.items())]:
            flags += ["--env", item]
        return _in_namespace([str(RUNNER), str(self.root), self.user, *flags, "--", *command])

    def run(
        self, args: Sequence[str], *, binds: Mapping[str, str] = {}, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(args, binds=binds),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(
        self, args: Sequence[str], *, binds: Mapping[str, str] = {}, env: Mapping[str, str] = {}
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(args, binds=binds, env=env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )


def built_record() -> dict[str, Any]:
    """What scripts/build-image recorded, or skip (fail in CI) saying why there is none."""
    unavailable = BUILT / "unavailable"
    if unavailable.exists():
        _missing(f"no image: {unavailable.read_text(encoding='utf-8').strip()}")
    record = BUILT / "image.json"
    if not record.exists():
        _missing("no image built: run `make image` (make test builds it)")
    if shutil.which("podman") is None or shutil.which("unshare") is None:
        _missing("podman or unshare is not on PATH (scripts/ensure-podman installs podman)")
    data: dict[str, Any] = json.loads(record.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="session")
def image() -> Iterator[Image]:
    record = built_record()
    ref = str(record["image"])
    inspected = subprocess.run(
        _podman("image", "inspect", ref), capture_output=True, text=True, check=False
    )
    if inspected.returncode != 0:
        pytest.fail(
            f"{ref} in build/image/image.json, but podman has no such image: run make image"
        )
    (info,) = json.loads(inspected.stdout)
    assert info["Id"].startswith(record["id"][:12]), "build/image/image.json is stale: make image"
    mounted = subprocess.run(
        _podman("image", "mount", ref), capture_output=True, text=True, check=True
    )
    try:
        config = {**info["Config"], "Healthcheck": info.get("Healthcheck")}
        yield Image(ref, record, config, Path(mounted.stdout.strip()))
    finally:
        subprocess.run(_podman("image", "unmount", ref), capture_output=True, check=False)
