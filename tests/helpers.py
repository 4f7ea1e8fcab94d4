"""Small helpers shared by tests."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any


def prom_get(base_url: str, path: str, **params: str) -> Any:
    """GET a Prometheus HTTP API path and return the decoded `data` field."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{base_url}{path}{query}", timeout=10) as response:  # noqa: S310
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def pid_alive(pid: int) -> bool:
    """True if ``pid`` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in {"Z", "X"}


def write_configmap_volume(directory: Path, files: dict[str, str]) -> None:
    """Lay out ``files`` as the kubelet does for a ConfigMap volume, or update them as it
    does: a new timestamped directory, then an atomic swap of the ``..data`` symlink.
    Each visible file is a symlink ``name -> ..data/name`` that never changes itself."""
    directory.mkdir(parents=True, exist_ok=True)
    generations = sorted(directory.glob("..20*"))
    target = directory / f"..2024_01_01_00_00_00.{len(generations):06d}"
    target.mkdir()
    for name, text in files.items():
        (target / name).write_text(text, encoding="utf-8")
    swap = directory / "..data_tmp"
    swap.symlink_to(target.name)
    swap.replace(directory / "..data")
    for name in files:
        link = directory / name
        if not link.is_symlink():
            link.symlink_to(f"..data/{name}")
