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
