"""Cgroup file text as a kubelet and container runtime would lay it out.

Used to give simulated processes a realistic ``/proc/<pid>/cgroup`` (the attribution code parses
it exactly as it parses the host's), and to write fixture ``/proc`` trees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Driver = Literal["systemd", "cgroupfs"]
Runtime = Literal["containerd", "crio", "docker"]
Qos = Literal["guaranteed", "burstable", "besteffort"]

_V1_CONTROLLERS = ("memory", "cpu,cpuacct", "devices", "pids", "name=systemd")
NO_POD_PATH = "/user.slice/user-1000.slice/session-3.scope"


def pod_cgroup_path(
    pod_uid: str, container_id: str | None, *, driver: Driver, runtime: Runtime, qos: Qos
) -> str:
    if driver == "systemd":
        uid = pod_uid.replace("-", "_")
        if qos == "guaranteed":
            path = f"/kubepods.slice/kubepods-pod{uid}.slice"
        else:
            path = f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid}.slice"
        if container_id is not None:
            prefix = {"containerd": "cri-containerd", "crio": "crio", "docker": "docker"}[runtime]
            path += f"/{prefix}-{container_id}.scope"
        return path
    path = "/kubepods" if qos == "guaranteed" else f"/kubepods/{qos}"
    path += f"/pod{pod_uid}"
    if container_id is not None:
        path += f"/crio-{container_id}" if runtime == "crio" else f"/{container_id}"
    return path


def cgroup_file_text(path: str, version: Literal[1, 2]) -> str:
    """A whole ``/proc/<pid>/cgroup`` file for a process in cgroup ``path``."""
    if version == 2:
        return f"0::{path}\n"
    lines = [f"{12 - i}:{c}:{path}" for i, c in enumerate(_V1_CONTROLLERS)]
    return "\n".join(lines) + "\n"


def write_proc_entry(proc_root: Path, pid: int, cgroup_text: str) -> None:
    """Create ``<proc_root>/<pid>/cgroup`` (fixtures and the demo's fake host /proc)."""
    entry = proc_root / str(pid)
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "cgroup").write_text(cgroup_text)
