"""Raw readings from a GPU backend, before attribution. Immutable and backend-neutral."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ProcessKind(StrEnum):
    COMPUTE = "compute"
    GRAPHICS = "graphics"
    MPS = "mps"


class MigState(StrEnum):
    """The ``mig`` label of ``guardian_gpu_info``."""

    DISABLED = "disabled"
    ENABLED = "enabled"  # a physical GPU in MIG mode; its memory is split into MIG devices
    INSTANCE = "instance"  # a MIG device


@dataclass(frozen=True, slots=True)
class ProcessReading:
    pid: int
    # None means NVML did not know (e.g. NVML_VALUE_NOT_AVAILABLE); it is never read as 0.
    used_memory_bytes: int | None
    kind: ProcessKind = ProcessKind.COMPUTE


@dataclass(frozen=True, slots=True)
class ProcessUtilSample:
    pid: int
    timestamp_us: int
    sm_percent: float


@dataclass(frozen=True, slots=True)
class UtilSample:
    """One driver sample of device utilization (``nvmlDeviceGetSamples``)."""

    timestamp_us: int
    percent: float


@dataclass(frozen=True, slots=True)
class DeviceReading:
    """One physical GPU or one MIG device. Every optional field is None when unsupported."""

    index: str  # NVML index; "<parent>/<slot>" for a MIG device
    uuid: str
    model: str
    mig: MigState = MigState.DISABLED
    parent_uuid: str | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    utilization_percent: float | None = None
    temperature_celsius: float | None = None
    power_watts: float | None = None
    energy_joules: float | None = None
    # None: the driver cannot give samples (unsupported, MIG); () means "no new samples".
    util_samples: tuple[UtilSample, ...] | None = None
    processes: tuple[ProcessReading, ...] = ()
    process_samples: tuple[ProcessUtilSample, ...] | None = None


@dataclass(frozen=True, slots=True)
class BackendError:
    """A non-fatal error met while reading; counted in ``guardian_exporter_errors_total``."""

    op: str
    kind: str


@dataclass(frozen=True, slots=True)
class NodeReading:
    driver_version: str
    devices: tuple[DeviceReading, ...]
    errors: tuple[BackendError, ...] = field(default=())
