"""Helpers for the real-time end-to-end tests: series pushed into a real Prometheus by
remote write (history and the next minutes at once, so every evaluator reading it at a
given timestamp sees the same data), and a controller wired as `guardian run` wires it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from guardian.adapters.remote_write import RemoteWriteClient
from guardian.app.controller import ControllerParts
from guardian.app.http_api import EngineHTTPServer
from guardian.app.rules.build import EngineParts, build_engine
from guardian.app.rules.scheduler import GroupScheduler
from guardian.app.settings.config_file import load_settings
from guardian.model.http_client import HttpClientConfig
from guardian.model.series import TimeSeries

Value = Callable[[float], float | None]  # unix seconds -> value (None: no sample)


def series(
    name: str, labels: Mapping[str, str], times: Iterable[float], value: Value
) -> TimeSeries:
    samples = [(round(t * 1000), v) for t in times if (v := value(t)) is not None]
    return TimeSeries({"__name__": name, **labels}, samples)


def steps(start: float, end: float, step: float) -> list[float]:
    count = int((end - start) / step) + 1
    return [start + i * step for i in range(count)]


def push(prometheus_url: str, data: Iterable[TimeSeries]) -> None:
    """Remote-write ``data`` (each series in time order) into the Prometheus."""
    with RemoteWriteClient(HttpClientConfig(f"{prometheus_url}/api/v1/write", timeout=30)) as rw:
        rw.write(list(data))


def alertmanager_alerts(url: str, **params: str) -> list[dict[str, Any]]:
    response = requests.get(f"{url}/api/v2/alerts", params=params, timeout=5)
    response.raise_for_status()
    alerts: list[dict[str, Any]] = response.json()
    return alerts


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@dataclass
class RunningController:
    """`guardian run` without its signal handling: engine, scheduler, HTTP API, controller."""

    engine_parts: EngineParts
    controller: ControllerParts
    scheduler: GroupScheduler
    http: EngineHTTPServer

    @classmethod
    def start(cls, config_path: str, env: Mapping[str, str] | None = None) -> RunningController:
        settings = load_settings(config_path, env or {})
        parts = build_engine(settings)
        controller = ControllerParts(settings, parts.engine, env=env or {}, clock=time.time)
        host, port = settings.listen_host_port
        http = EngineHTTPServer(parts.engine, host, port, status=controller.status)
        http.start()
        controller.start(on_leadership_lost=lambda: None)
        scheduler = GroupScheduler(parts.engine)
        scheduler.start()
        return cls(parts, controller, scheduler, http)

    def stop(self) -> None:
        self.scheduler.shutdown(wait=True)
        self.controller.close()
        self.http.stop()
        self.engine_parts.querier.close()
        self.engine_parts.engine.close()
