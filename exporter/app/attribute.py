"""The ``attribute`` debugging command: PID -> pod attribution of a /proc tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exporter.adapters.procfs import ProcReader
from exporter.engine.cgroup import parse_cgroup_file
from exporter.model.attribution import NO_POD


def attribute(proc_root: Path, pid: int | None = None) -> list[dict[str, Any]]:
    """One object per numeric directory under ``proc_root`` (or just ``pid``)."""
    reader = ProcReader(proc_root)
    pids = reader.pids() if pid is None else [pid]
    out: list[dict[str, Any]] = []
    for p in pids:
        text = reader.read_cgroup(p)
        ident = NO_POD if text is None else parse_cgroup_file(text)
        out.append({"pid": p, "pod_uid": ident.pod_uid, "container_id": ident.container_id})
    return out
