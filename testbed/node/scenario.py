"""The scenario file: simulated GPUs, processes over time and injected faults.

A scenario is YAML, validated at load with unknown keys rejected; errors name the file, the
line and the field. Times are seconds since the scenario started, written as a number or
a duration (``90``, ``1m30s``), as everywhere else. See docs/exporter.md.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from exporter.model.errors import ConfigError
from exporter.model.readings import ProcessKind
from guardian_common.config_types import (
    Duration,
    DurationOrZero,
    Float,
    Int,
    NotBool,
    StrictModel,
)
from guardian_common.files import read_text
from guardian_common.yamldoc import parse_yaml

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)?\s*$")
_UNITS = {
    None: 1,
    "B": 1,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
    "TiB": 1 << 40,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}


def _bytes(value: Any) -> Any:
    """Accept 85899345920, "80GiB" or "512 MiB"; not ``true``."""
    if isinstance(value, bool):
        raise ValueError("must be a size in bytes or e.g. '80GiB', not a boolean")
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match is None:
            raise ValueError(f"not a size: {value!r} (use bytes or e.g. '80GiB')")
        return int(float(match.group(1)) * _UNITS[match.group(2)])
    return value


Bytes = Annotated[Int, BeforeValidator(_bytes), Field(ge=0)]


class Field_(StrEnum):
    """Device fields a simulated GPU can report as NotSupported."""

    MEMORY = "memory"
    UTILIZATION = "utilization"
    TEMPERATURE = "temperature"
    POWER = "power"
    ENERGY = "energy"
    SAMPLES = "samples"
    PROCESS_UTILIZATION = "process_utilization"


class MigDevice(StrictModel):
    uuid: str = Field(pattern=r"^MIG-")
    profile: str = "1g.10gb"
    memory_total: Bytes


class Gpu(StrictModel):
    uuid: str = Field(pattern=r"^GPU-")
    model: str = "NVIDIA A100-SXM4-80GB"
    memory_total: Bytes = 85899345920
    # Memory the driver and contexts use beyond what the processes report.
    memory_overhead: Bytes = 0
    temperature_celsius: Float = 35.0
    idle_power_watts: Float = 60.0
    max_power_watts: Float = 400.0
    unsupported: tuple[Field_, ...] = ()
    mig_devices: tuple[MigDevice, ...] = ()


class UtilStep(StrictModel):
    at: DurationOrZero
    percent: Float


class Process(StrictModel):
    pid: Int = Field(gt=0)
    gpu: str  # a GPU or MIG device UUID
    kind: ProcessKind = ProcessKind.COMPUTE
    memory: Bytes | None = None  # null: NVML reports "not available"
    # A constant percent, or steps: [{at: 0, percent: 80}, {at: 60, percent: 0}].
    sm_percent: Float | tuple[UtilStep, ...] = 0.0
    start: DurationOrZero = 0.0
    end: DurationOrZero | None = None
    pod_uid: str | None = None
    container_id: str | None = None
    qos: Literal["guaranteed", "burstable", "besteffort"] = "burstable"

    def alive_at(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t < self.end)

    def sm_at(self, t: float) -> float:
        if isinstance(self.sm_percent, float | int):
            return float(self.sm_percent)
        value = 0.0
        for step in self.sm_percent:
            if step.at <= t:
                value = step.percent
        return value


class FaultKind(StrEnum):
    NVML_INIT_FAILURE = "nvml_init_failure"
    GPU_LOST = "gpu_lost"
    HUNG_CALL = "hung_call"


class Fault(StrictModel):
    kind: FaultKind
    start: DurationOrZero = 0.0
    end: DurationOrZero | None = None
    gpu: str | None = None  # gpu_lost: which GPU (any GPU if omitted)
    hang_seconds: Duration = 30.0  # hung_call: how long a read blocks

    def active_at(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t < self.end)


class Node(StrictModel):
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    cgroup_version: Annotated[Literal[1, 2], NotBool] = 2
    runtime: Literal["containerd", "crio", "docker"] = "containerd"


class Scenario(StrictModel):
    version: Annotated[Literal[1], NotBool] = 1
    driver_version: str = "550.54.15"
    # How often the simulated driver takes a utilization sample.
    sample_period_seconds: Duration = 1.0
    node: Node = Node()
    gpus: tuple[Gpu, ...]
    processes: tuple[Process, ...] = ()
    faults: tuple[Fault, ...] = ()

    @model_validator(mode="after")
    def _check_references(self) -> Scenario:
        devices = {g.uuid for g in self.gpus} | {m.uuid for g in self.gpus for m in g.mig_devices}
        if len(devices) != len(self.gpus) + sum(len(g.mig_devices) for g in self.gpus):
            raise ValueError("GPU and MIG device UUIDs must be unique")
        for i, proc in enumerate(self.processes):
            if proc.gpu not in devices:
                raise ValueError(f"processes[{i}].gpu: unknown device {proc.gpu!r}")
            if proc.end is not None and proc.end <= proc.start:
                raise ValueError(f"processes[{i}].end: must be after start")
        for i, fault in enumerate(self.faults):
            if fault.gpu is not None and fault.gpu not in devices:
                raise ValueError(f"faults[{i}].gpu: unknown device {fault.gpu!r}")
        return self


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    doc = parse_yaml(text, source)
    if not isinstance(doc.data, dict):
        raise ConfigError("a scenario must be a YAML mapping", path=source, line=1)
    try:
        return Scenario.model_validate(doc.data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if isinstance(p, int | str))
        raise doc.error(str(err["msg"]).removeprefix("Value error, "), loc, _fields(loc)) from None


def _fields(loc: tuple[int | str, ...]) -> str | None:
    """``processes.1.end``, as the scenario docs name fields."""
    return ".".join(str(p) for p in loc) or None


def load_scenario(path: Path) -> Scenario:
    return parse_scenario(read_text(path, what="scenario"), str(path))
