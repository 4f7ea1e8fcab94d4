"""The one small interface every GPU backend implements."""

from __future__ import annotations

from typing import Protocol

from exporter.model.readings import NodeReading


class GpuBackend(Protocol):
    """A source of GPU readings (real NVML or a simulated scenario).

    ``open`` and ``read`` raise :class:`exporter.model.errors.BackendUnavailable` when the
    backend is down; the caller then calls ``close`` and retries ``open`` later.
    """

    name: str

    def open(self) -> None: ...

    def read(self) -> NodeReading: ...

    def close(self) -> None: ...


class CgroupReader(Protocol):
    """Reads the cgroup file of a host PID; None when the process is gone or unreadable."""

    def read_cgroup(self, pid: int) -> str | None: ...
