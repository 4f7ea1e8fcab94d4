"""The NVML backend, through NVIDIA's nvidia-ml-py (module ``pynvml``).

Error policy (see docs/exporter.md):
- NotSupported, NoPermission, FunctionNotFound, Deprecated: omit that series, log once.
- Lifecycle errors (GpuIsLost, Uninitialized, DriverNotLoaded, LibRmVersionMismatch,
  GpuNotFound, ...): raise BackendUnavailable; the collector shuts NVML down and re-initialises
  it later with backoff.
- Anything else on one field: omit it this cycle and count the error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pynvml

from exporter.adapters.procfs import valid_pid
from exporter.model.errors import BackendUnavailable
from exporter.model.readings import (
    BackendError,
    DeviceReading,
    MigState,
    NodeReading,
    ProcessKind,
    ProcessReading,
    ProcessUtilSample,
    UtilSample,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

LIFECYCLE = frozenset(
    {
        pynvml.NVML_ERROR_UNINITIALIZED,
        pynvml.NVML_ERROR_DRIVER_NOT_LOADED,
        pynvml.NVML_ERROR_GPU_IS_LOST,
        pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        pynvml.NVML_ERROR_GPU_NOT_FOUND,
        pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
        pynvml.NVML_ERROR_RESET_REQUIRED,
    }
)
UNSUPPORTED = frozenset(
    {
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        pynvml.NVML_ERROR_NO_PERMISSION,
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        pynvml.NVML_ERROR_DEPRECATED,
    }
)
_KINDS = {
    getattr(pynvml, name): name.removeprefix("NVML_ERROR_").lower()
    for name in dir(pynvml)
    if name.startswith("NVML_ERROR_")
}
_PROCESS_LISTS: tuple[tuple[str, ProcessKind], ...] = (
    ("nvmlDeviceGetComputeRunningProcesses_v3", ProcessKind.COMPUTE),
    ("nvmlDeviceGetGraphicsRunningProcesses_v3", ProcessKind.GRAPHICS),
    ("nvmlDeviceGetMPSComputeRunningProcesses_v3", ProcessKind.MPS),
)
_LIST_RETRIES = 3


def error_kind(exc: BaseException) -> str:
    value = getattr(exc, "value", None)
    return _KINDS.get(value, "unknown") if isinstance(value, int) else "unknown"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _sample_value(value_type: int, sample: Any) -> float:
    v = sample.sampleValue
    return float(
        {
            pynvml.NVML_VALUE_TYPE_DOUBLE: v.dVal,
            pynvml.NVML_VALUE_TYPE_UNSIGNED_INT: v.uiVal,
            pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG: v.ulVal,
            pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: v.ullVal,
            pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: v.sllVal,
            pynvml.NVML_VALUE_TYPE_SIGNED_INT: v.siVal,
            pynvml.NVML_VALUE_TYPE_UNSIGNED_SHORT: v.usVal,
        }.get(value_type, v.uiVal)
    )


class NvmlBackend:
    name = "nvml"

    def __init__(self) -> None:
        self._driver = ""
        self._reported: set[tuple[str, str]] = set()
        self._errors: list[BackendError] = []
        self._proc_util_ts: dict[str, int] = {}
        self._sample_ts: dict[str, int] = {}
        self._new_proc_util = True
        self._memory_v2 = True
        self._temperature_v = True

    # ----------------------------------------------------------------- lifecycle
    def open(self) -> None:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise BackendUnavailable(
                f"NVML init failed: {exc}", op="init", kind=error_kind(exc)
            ) from exc
        try:
            self._driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except pynvml.NVMLError as exc:
            self.close()
            raise BackendUnavailable(
                f"NVML driver version: {exc}", op="driver_version", kind=error_kind(exc)
            ) from exc

    def close(self) -> None:
        # The next open may see another driver: forget every timestamp and capability.
        self._proc_util_ts.clear()
        self._sample_ts.clear()
        self._new_proc_util = self._memory_v2 = self._temperature_v = True
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError as exc:
            logger.debug("nvmlShutdown: %s", exc)

    # ----------------------------------------------------------------- helpers
    def _lost(self, op: str, exc: BaseException) -> BackendUnavailable:
        return BackendUnavailable(f"{op}: {exc}", op=op, kind=error_kind(exc))

    def _raise_if_lost(self, op: str, exc: BaseException) -> None:
        """A lifecycle error (the driver or the GPU gone) loses the whole backend."""
        if getattr(exc, "value", None) in LIFECYCLE:
            raise self._lost(op, exc) from exc

    def _field(self, op: str, uuid: str, fn: Callable[..., T], *args: Any) -> T | None:
        """Call one NVML query; None means "omit this series"."""
        try:
            return fn(*args)
        except pynvml.NVMLError as exc:
            self._raise_if_lost(op, exc)
            code = getattr(exc, "value", None)
            kind = error_kind(exc)
            if code in UNSUPPORTED:
                if (op, uuid) not in self._reported:
                    self._reported.add((op, uuid))
                    self._errors.append(BackendError(op, kind))
                    logger.info("%s is not available on %s (%s); omitting it", op, uuid, exc)
                return None
            self._errors.append(BackendError(op, kind))
            logger.warning("%s failed on %s: %s", op, uuid, exc)
            return None

    # ----------------------------------------------------------------- reading
    def read(self) -> NodeReading:
        self._errors = []
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            raise self._lost("device_count", exc) from exc
        devices: list[DeviceReading] = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                uuid = _text(pynvml.nvmlDeviceGetUUID(handle))
                model = _text(pynvml.nvmlDeviceGetName(handle))
            except pynvml.NVMLError as exc:
                self._raise_if_lost("device_handle", exc)
                self._errors.append(BackendError("device_handle", error_kind(exc)))
                logger.warning("skipping GPU %s: %s", index, exc)
                continue
            devices.extend(self._read_device(str(index), handle, uuid, model))
        return NodeReading(self._driver, tuple(devices), tuple(self._errors))

    def _read_device(self, index: str, handle: Any, uuid: str, model: str) -> list[DeviceReading]:
        mig_mode = self._field("mig_mode", uuid, pynvml.nvmlDeviceGetMigMode, handle)
        mig_enabled = mig_mode is not None and mig_mode[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        used, total = self._memory(handle, uuid)
        temperature = self._temperature(handle, uuid)
        power_mw = self._field("power_usage", uuid, pynvml.nvmlDeviceGetPowerUsage, handle)
        # What a GPU reads in either mode; a MIG parent reads no more (its slices do).
        base = DeviceReading(
            index,
            uuid,
            model,
            memory_used_bytes=used,
            memory_total_bytes=total,
            temperature_celsius=temperature,
            power_watts=None if power_mw is None else power_mw / 1000.0,
        )
        if mig_enabled:
            parent = replace(base, mig=MigState.ENABLED)
            return [parent, *self._read_mig_devices(index, handle, uuid)]
        util = self._field("utilization_rates", uuid, pynvml.nvmlDeviceGetUtilizationRates, handle)
        energy_mj = self._field(
            "total_energy_consumption", uuid, pynvml.nvmlDeviceGetTotalEnergyConsumption, handle
        )
        whole = replace(
            base,
            utilization_percent=None if util is None else float(util.gpu),
            energy_joules=None if energy_mj is None else energy_mj / 1000.0,
            util_samples=self._util_samples(handle, uuid),
            processes=self._processes(handle, uuid),
            process_samples=self._process_samples(handle, uuid),
        )
        return [whole]

    def _read_mig_devices(self, index: str, handle: Any, uuid: str) -> list[DeviceReading]:
        slots = self._field(
            "max_mig_device_count", uuid, pynvml.nvmlDeviceGetMaxMigDeviceCount, handle
        )
        out: list[DeviceReading] = []
        for slot in range(slots or 0):
            try:
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except pynvml.NVMLError as exc:
                self._raise_if_lost("mig_device_handle", exc)
                continue  # an empty slot reads NotFound or InvalidArgument
            try:
                mig_uuid = _text(pynvml.nvmlDeviceGetUUID(mig))
                mig_model = _text(pynvml.nvmlDeviceGetName(mig))
            except pynvml.NVMLError as exc:
                self._raise_if_lost("mig_device_handle", exc)
                self._errors.append(BackendError("mig_device_handle", error_kind(exc)))
                continue
            used, total = self._memory(mig, mig_uuid)
            out.append(
                DeviceReading(
                    index=f"{index}/{slot}",
                    uuid=mig_uuid,
                    model=mig_model,
                    mig=MigState.INSTANCE,
                    parent_uuid=uuid,
                    memory_used_bytes=used,
                    memory_total_bytes=total,
                    processes=self._processes(mig, mig_uuid),
                    # NVML gives no per-process utilization on MIG devices.
                    process_samples=None,
                )
            )
        return out

    def _memory(self, handle: Any, uuid: str) -> tuple[int | None, int | None]:
        if self._memory_v2:
            try:
                info = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
                return int(info.used), int(info.total)
            except (
                pynvml.NVMLError_FunctionNotFound,
                pynvml.NVMLError_ArgumentVersionMismatch,
            ):
                self._memory_v2 = False  # a pre-R510 driver: v1 it is
            except pynvml.NVMLError as exc:
                self._raise_if_lost("memory_info", exc)
        info = self._field("memory_info", uuid, pynvml.nvmlDeviceGetMemoryInfo, handle)
        return (None, None) if info is None else (int(info.used), int(info.total))

    def _temperature(self, handle: Any, uuid: str) -> float | None:
        if self._temperature_v:
            try:
                return float(pynvml.nvmlDeviceGetTemperatureV(handle, pynvml.NVML_TEMPERATURE_GPU))
            except pynvml.NVMLError_FunctionNotFound:
                self._temperature_v = False
            except pynvml.NVMLError as exc:
                self._raise_if_lost("temperature", exc)
        value = self._field(
            "temperature",
            uuid,
            pynvml.nvmlDeviceGetTemperature,
            handle,
            pynvml.NVML_TEMPERATURE_GPU,
        )
        return None if value is None else float(value)

    def _util_samples(self, handle: Any, uuid: str) -> tuple[UtilSample, ...] | None:
        last = self._sample_ts.get(uuid, 0)
        try:
            value_type, samples = pynvml.nvmlDeviceGetSamples(
                handle, pynvml.NVML_GPU_UTILIZATION_SAMPLES, last
            )
        except pynvml.NVMLError_NotFound:
            return ()  # no sample newer than `last`
        except pynvml.NVMLError as exc:
            self._field("samples", uuid, _reraise, exc)
            return None
        out = tuple(
            UtilSample(int(s.timeStamp), _sample_value(value_type, s))
            for s in samples
            if int(s.timeStamp) > last
        )
        if out:
            self._sample_ts[uuid] = max(s.timestamp_us for s in out)
        return out

    def _processes(self, handle: Any, uuid: str) -> tuple[ProcessReading, ...]:
        out: list[ProcessReading] = []
        for fn_name, kind in _PROCESS_LISTS:
            fn = getattr(pynvml, fn_name)
            for attempt in range(_LIST_RETRIES):
                try:
                    procs = fn(handle)
                    break
                except pynvml.NVMLError_InsufficientSize:
                    # The list grew between NVML's size query and the copy; ask again.
                    logger.debug("%s: list grew (attempt %s)", fn_name, attempt + 1)
            else:
                self._errors.append(BackendError(kind.value + "_processes", "insufficient_size"))
                procs = None
            if procs is None:
                continue
            for p in procs:
                if not valid_pid(int(p.pid)):
                    # A scrambled struct (driver/binding mismatch) reads pid 0 or 2^32-1.
                    self._errors.append(BackendError(kind.value + "_processes", "invalid_pid"))
                    continue
                mem = p.usedGpuMemory
                out.append(ProcessReading(int(p.pid), None if mem is None else int(mem), kind))
        return tuple(out)

    def _process_samples(self, handle: Any, uuid: str) -> tuple[ProcessUtilSample, ...] | None:
        last = self._proc_util_ts.get(uuid, 0)
        samples: list[Any] | None = None
        if self._new_proc_util:
            try:
                samples = pynvml.nvmlDeviceGetProcessesUtilizationInfo(handle, last)
            except pynvml.NVMLError_FunctionNotFound:
                self._new_proc_util = False  # driver older than R550
            except pynvml.NVMLError as exc:
                return self._no_process_samples(uuid, exc)
        if samples is None:
            try:
                samples = pynvml.nvmlDeviceGetProcessUtilization(handle, last)
            except pynvml.NVMLError as exc:
                return self._no_process_samples(uuid, exc)
        out = tuple(
            ProcessUtilSample(int(s.pid), int(s.timeStamp), float(s.smUtil))
            for s in samples
            if int(s.timeStamp) > last
        )
        if out:
            self._proc_util_ts[uuid] = max(s.timestamp_us for s in out)
        return out

    def _no_process_samples(
        self, uuid: str, exc: BaseException
    ) -> tuple[ProcessUtilSample, ...] | None:
        # NOT_FOUND (and the binding's bogus "Success" error) mean "no new samples".
        if getattr(exc, "value", None) in (pynvml.NVML_ERROR_NOT_FOUND, pynvml.NVML_SUCCESS):
            return ()
        self._field("process_utilization", uuid, _reraise, exc)
        return None


def _reraise(exc: BaseException) -> None:
    raise exc
